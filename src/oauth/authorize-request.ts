/**
 * The checks of an authorization request (docs/mcp-oauth.md), shared by `GET /oauth/authorize`, the
 * consent page and its form post. In RFC 6749 §4.1.2.1's order: an unknown client or a
 * `redirect_uri` not registered for it is told on an HTML page, never by a redirect (the redirect
 * could not be trusted); every other error is put on the client's redirect as `error`, with `state`
 * and `iss` (RFC 9207). PKCE S256 is required (OAuth 2.1); `resource`, when sent, must be the MCP
 * endpoint (RFC 8707); `scope`, when sent, may only ask for `mcp`.
 */
import type { RedisContext } from '../redis/context'
import { esc, htmlPage } from '../pages/html'
import { findClient, type OAuthClient } from './clients'
import type { OAuthErrorCode } from './errors'
import { CODE_CHALLENGE } from './pkce'

export interface AuthorizationRequest {
  client: OAuthClient
  redirectUri: string
  state: string | null
  codeChallenge: string
  /** '' when the request named none. */
  resource: string
}

export type CheckedRequest =
  | { kind: 'ok'; request: AuthorizationRequest }
  | { kind: 'page'; message: string }
  | { kind: 'redirect'; location: string }

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

export const mcpResource = (baseUrl: string) => `${baseUrl}/mcp`

/** `params` as a GET query or the consent form's hidden fields. */
export async function checkAuthorizationRequest(ctx: RedisContext, params: (name: string) => string | null): Promise<CheckedRequest> {
  const clientId = params('client_id')
  if (!clientId || CONTROL.test(clientId)) return { kind: 'page', message: 'The request names no client (client_id is missing).' }
  const client = await findClient(ctx, clientId)
  if (!client) return { kind: 'page', message: 'The application asking for access is not registered here, or its metadata document could not be read.' }
  const asked = params('redirect_uri')
  const redirectUri = asked ?? (client.redirect_uris.length === 1 ? client.redirect_uris[0]! : null)
  if (!redirectUri || !client.redirect_uris.includes(redirectUri))
    return { kind: 'page', message: 'The address to send you back to (redirect_uri) is not one the application registered, so you are not sent there.' }

  const state = params('state')
  const fail = (error: OAuthErrorCode, description: string): CheckedRequest => ({
    kind: 'redirect',
    location: errorRedirect(redirectUri, ctx.cfg.BASE_URL, error, description, state !== null && !CONTROL.test(state) ? state : null),
  })
  for (const name of ['state', 'scope', 'resource', 'code_challenge', 'code_challenge_method', 'response_type'])
    if (CONTROL.test(params(name) ?? '') || (params(name) ?? '').length > 2000) return fail('invalid_request', `${name}: at most 2000 characters, no control characters`)
  if (params('response_type') !== 'code') return fail('unsupported_response_type', 'response_type must be code')
  const challenge = params('code_challenge')
  if (params('code_challenge_method') !== 'S256' || !challenge || !CODE_CHALLENGE.test(challenge))
    return fail('invalid_request', 'PKCE is required: code_challenge (43 base64url characters) with code_challenge_method=S256')
  const resource = params('resource') ?? ''
  if (resource !== '' && resource !== mcpResource(ctx.cfg.BASE_URL)) return fail('invalid_target', `resource must be ${mcpResource(ctx.cfg.BASE_URL)}`)
  const scope = params('scope')
  if (scope !== null && scope.split(' ').some((s) => s !== '' && s !== 'mcp')) return fail('invalid_scope', 'the only scope is mcp')
  return { kind: 'ok', request: { client, redirectUri, state, codeChallenge: challenge, resource } }
}

/** The client's redirect with the authorization response's parameters added (its own query kept). */
export function clientRedirect(redirectUri: string, params: Record<string, string | null>): string {
  const u = new URL(redirectUri)
  for (const [k, v] of Object.entries(params)) if (v !== null) u.searchParams.set(k, v)
  return u.toString()
}

export function errorRedirect(redirectUri: string, issuer: string, error: OAuthErrorCode, description: string, state: string | null): string {
  return clientRedirect(redirectUri, { error, error_description: description, state, iss: issuer })
}

/** An authorization request that cannot be answered by a redirect: a page, never a redirect. */
export const refusalPage = (message: string) =>
  htmlPage(400, 'Authorization refused', `<h1 class="error">This connection request cannot be used</h1><p>${esc(message)}</p><p class="note">Nothing was shared. Go back to the application and connect again.</p>`)

/** RFC 6749's authorization responses are 302 redirects. */
export function found(location: string): Response {
  return new Response(null, { status: 302, headers: { location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' } })
}

/** The answer to a request that is not OK (its page or its error redirect), or null. */
export const answerUnlessOk = (c: CheckedRequest): Response | null => (c.kind === 'page' ? refusalPage(c.message) : c.kind === 'redirect' ? found(c.location) : null)

export const protectedResourceMetadataUrl = (baseUrl: string) => `${baseUrl}/.well-known/oauth-protected-resource/mcp`

/** The 401 challenge of /mcp (RFC 9728 §5.1): where a client learns how to get a token. */
export const mcpChallenge = (baseUrl: string) => `Bearer resource_metadata="${protectedResourceMetadataUrl(baseUrl)}", scope="mcp"`
