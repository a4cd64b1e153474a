/**
 * OAuth clients of the MCP endpoint (docs/mcp-oauth.md): public clients only (no secret; PKCE is
 * their proof). Two kinds: registered here (RFC 7591, `POST /oauth/register`, kept in Redis), or a
 * client-id metadata document: a `client_id` that is an https URL names a JSON document with the
 * client's `redirect_uris` and `client_name`, fetched under the webhook address rules (no private,
 * loopback or special-purpose target; the resolved address pinned; size and time bounded).
 * Redirect URIs are https, or http on a loopback host (native apps, RFC 8252 §7.3).
 * The shape of the metadata is the MCP SDK's schema (OAuthClientMetadataSchema); the rules on top
 * of it are ours.
 */
import { OAuthClientMetadataSchema } from '@modelcontextprotocol/sdk/shared/auth.js'
import { ApiError } from '../errors'
import { checkText } from '../edge/text'
import { randomId } from '../auth/tokens'
import { resolveTarget } from '../events/webhook-send'
import type { RedisContext } from '../redis/context'
import { OAuthError } from './errors'

export interface OAuthClient {
  client_id: string
  client_name: string
  redirect_uris: string[]
}

export const MAX_REGISTRATION_BYTES = 8192
export const REGISTRATIONS_PER_IP_HOUR = 20
const MAX_REDIRECT_URIS = 8
const MAX_URI = 2000
const MAX_NAME = 100
const METADATA_TIMEOUT_MS = 5000
const METADATA_MAX_BYTES = 16_384
/** A registered client unused for a year is forgotten (its id is a capability to ask for consent, nothing more). */
const CLIENT_TTL_S = 365 * 86400
const CLIENT_ID = /^mcpc_[A-Za-z0-9_-]{22}$/

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]'])

/** Whether a redirect URI may be registered: https, or http to a loopback host; no fragment. */
export function redirectUriAllowed(raw: string): boolean {
  if (raw.length > MAX_URI) return false
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    return false
  }
  if (u.hash || raw.includes('#') || u.username || u.password) return false
  return u.protocol === 'https:' || (u.protocol === 'http:' && LOOPBACK.has(u.hostname))
}

/**
 * The client metadata of a registration or a metadata document, checked: the SDK's schema, then
 * public-client only, redirect URIs as above, the name a line of text. Throws OAuthError
 * (`invalid_redirect_uri` or `invalid_client_metadata`, RFC 7591 §3.2.2).
 */
export function checkClientMetadata(body: unknown, fallbackName: string): Omit<OAuthClient, 'client_id'> {
  const parsed = OAuthClientMetadataSchema.safeParse(body)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const field = issue?.path.join('.') || 'body'
    throw new OAuthError(field.startsWith('redirect_uris') ? 'invalid_redirect_uri' : 'invalid_client_metadata', `${field}: ${issue?.message ?? 'invalid'}`)
  }
  const m = parsed.data
  if (m.token_endpoint_auth_method !== undefined && m.token_endpoint_auth_method !== 'none')
    throw new OAuthError('invalid_client_metadata', 'token_endpoint_auth_method: only "none" (public clients with PKCE)')
  if (m.grant_types?.some((g) => g !== 'authorization_code' && g !== 'refresh_token'))
    throw new OAuthError('invalid_client_metadata', 'grant_types: only authorization_code and refresh_token')
  if (m.response_types?.some((r) => r !== 'code')) throw new OAuthError('invalid_client_metadata', 'response_types: only code')
  if (m.redirect_uris.length === 0 || m.redirect_uris.length > MAX_REDIRECT_URIS)
    throw new OAuthError('invalid_redirect_uri', `redirect_uris: 1 to ${MAX_REDIRECT_URIS} URIs`)
  const bad = m.redirect_uris.find((u) => !redirectUriAllowed(u))
  if (bad !== undefined) throw new OAuthError('invalid_redirect_uri', 'redirect_uris: each an https URL, or http on 127.0.0.1, localhost or [::1]; no fragment; at most 2000 characters')
  const name = (m.client_name ?? '').trim() || fallbackName
  if (name.length > MAX_NAME) throw new OAuthError('invalid_client_metadata', `client_name: at most ${MAX_NAME} characters`)
  try {
    checkText({ client_name: name, redirect_uris: m.redirect_uris })
  } catch (e) {
    if (e instanceof ApiError) throw new OAuthError('invalid_client_metadata', `${String(e.context.field)}: text without control characters`)
    throw e
  }
  return { client_name: name, redirect_uris: m.redirect_uris }
}

/** Registers a public client (RFC 7591), at most REGISTRATIONS_PER_IP_HOUR per client address. */
export async function registerClient(ctx: RedisContext, body: unknown, ip: string): Promise<OAuthClient & { client_id_issued_at: number }> {
  const now = ctx.clock.now()
  const hour = Math.floor(now / 3_600_000)
  const counter = ctx.keys.oauthRegistrations(ip, hour)
  const [[, count]] = (await ctx.redis.multi().incr(counter).expire(counter, 3600).exec()) as [[unknown, number]]
  if (count > REGISTRATIONS_PER_IP_HOUR) {
    const retry = Math.ceil(((hour + 1) * 3_600_000 - now) / 1000)
    throw new OAuthError('rate_limited', `at most ${REGISTRATIONS_PER_IP_HOUR} client registrations per address per hour`, 429, { 'retry-after': String(retry) })
  }
  const meta = checkClientMetadata(body, 'MCP client')
  const client = { client_id: `mcpc_${randomId()}`, ...meta }
  await ctx.redis.set(ctx.keys.oauthClient(client.client_id), JSON.stringify(meta), 'EX', CLIENT_TTL_S)
  return { ...client, client_id_issued_at: Math.floor(now / 1000) }
}

/** Whether a client id is a metadata document's URL (an https URL with a path, as the MCP spec has it). */
export function isMetadataUrl(clientId: string): boolean {
  return clientId.startsWith('https://')
}

/** The client a client id names, or null (unknown, unreachable, refused or invalid document). */
export async function findClient(ctx: RedisContext, clientId: string): Promise<OAuthClient | null> {
  if (isMetadataUrl(clientId)) return fetchMetadataDocument(clientId, ctx.cfg.WEBHOOKS_ALLOW_INSECURE_LOOPBACK === '1')
  if (!CLIENT_ID.test(clientId)) return null
  const raw = await ctx.redis.get(ctx.keys.oauthClient(clientId))
  if (!raw) return null
  return { client_id: clientId, ...(JSON.parse(raw) as Omit<OAuthClient, 'client_id'>) }
}

/**
 * A client-id metadata document: fetched once per authorization, under the webhook address rules
 * (events/webhook-send.ts resolveTarget), no redirects, at most METADATA_MAX_BYTES within
 * METADATA_TIMEOUT_MS; its `client_id` must be its own URL.
 */
export async function fetchMetadataDocument(url: string, allowInsecureLoopback: boolean): Promise<OAuthClient | null> {
  if (url.length > MAX_URI) return null
  const deadline = AbortSignal.timeout(METADATA_TIMEOUT_MS)
  try {
    const target = await resolveTarget(url, allowInsecureLoopback, deadline)
    if (typeof target === 'string') return null
    const res = await fetch(target.url, {
      headers: { ...target.headers, accept: 'application/json' },
      redirect: 'manual',
      signal: deadline,
      tls: target.tls,
    } as RequestInit)
    if (res.status !== 200 || !res.body) {
      await res.body?.cancel().catch(() => {})
      return null
    }
    const text = await readAtMost(res.body, METADATA_MAX_BYTES)
    if (text === null) return null
    const doc = JSON.parse(text) as { client_id?: unknown }
    if (doc.client_id !== url) return null
    return { client_id: url, ...checkClientMetadata(doc, new URL(url).hostname) }
  } catch {
    return null
  }
}

async function readAtMost(body: ReadableStream<Uint8Array>, limit: number): Promise<string | null> {
  const reader = body.getReader()
  const parts: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.length
    if (size > limit) {
      await reader.cancel().catch(() => {})
      return null
    }
    parts.push(value)
  }
  return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(parts))
}
