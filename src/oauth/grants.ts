/**
 * OAuth grants for MCP clients (docs/mcp-oauth.md): the authorization code, the access and refresh
 * tokens of one consent. Each is opaque, `<kind>_<acct>.<grant>.<secret>`: the account and grant
 * ids say where its record is (in the account's slot, so a redemption or a rotation is one script),
 * and only the SHA-256 of the 256-bit secret is stored. An access token acts as the agent its
 * consent created: it resolves to that agent's principal, so every admission and debit checks the
 * agent's state, budget, caps and allowlist as for its own token, and killing or revoking the agent
 * ends it. Such a token is known only to the MCP endpoint (TokenResolver does not read it), so the
 * REST API answers it UNAUTHORIZED.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Principal } from '../auth/principal'
import { randomId } from '../auth/tokens'
import { isAccountId } from '../redis/keys'
import type { RedisContext } from '../redis/context'
import { runOauthRedeem, runOauthRefresh, type GrantReply } from '../lua/oauth'
import { OAuthError } from './errors'
import { s256Challenge } from './pkce'

export const ACCESS_TOKEN_TTL_S = 3600
export const CODE_TTL_MS = 60_000
/** A used code is kept this long so that its second redemption is recognised (and revokes the grant). */
const CODE_RECORD_TTL_MS = 10 * 60_000
/** A grant unrefreshed this long is gone (each refresh renews it); the agent's own expiry ends it sooner. */
export const GRANT_TTL_MS = 90 * 86_400_000

type Kind = 'oac' | 'oat' | 'ort'
const TOKEN = /^(oac|oat|ort)_([A-Za-z0-9_-]{1,72})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')

interface Parsed {
  kind: Kind
  accountId: string
  grantId: string
  secretHash: string
}

/** The parts of a code or token of that kind, or null (malformed, another kind, a forged account id). */
export function parseGrantToken(value: string | undefined, kind: Kind): Parsed | null {
  const m = TOKEN.exec(value ?? '')
  if (!m || m[1] !== kind || !isAccountId(m[2]!)) return null
  return { kind, accountId: m[2]!, grantId: m[3]!, secretHash: sha256(m[4]!) }
}

function mint(kind: Kind, accountId: string, grantId: string): { value: string; hash: string } {
  const secret = randomBytes(32).toString('base64url')
  return { value: `${kind}_${accountId}.${grantId}.${secret}`, hash: sha256(secret) }
}

export interface Authorization {
  accountId: string
  clientId: string
  redirectUri: string
  codeChallenge: string
  /** '' when the request named none. */
  resource: string
  agentId: string
  agentTokenHash: string
}

/** Issues the authorization code of an Allowed consent (60 s, one use). */
export async function issueCode(ctx: RedisContext, a: Authorization): Promise<string> {
  const code = mint('oac', a.accountId, randomId())
  const key = ctx.keys.oauthCode(a.accountId, code.hash)
  await ctx.redis
    .multi()
    .hset(key, 'client', a.clientId, 'redirect', a.redirectUri, 'challenge', a.codeChallenge, 'resource', a.resource, 'agent', a.agentId, 'tok', a.agentTokenHash, 'exp', ctx.clock.now() + CODE_TTL_MS)
    .pexpire(key, CODE_RECORD_TTL_MS)
    .exec()
  return code.value
}

export interface TokenAnswer {
  access_token: string
  token_type: 'Bearer'
  expires_in: number
  refresh_token: string
  scope: 'mcp'
}

function newPair(accountId: string, grantId: string, now: number) {
  const access = mint('oat', accountId, grantId)
  const refresh = mint('ort', accountId, grantId)
  return {
    access,
    refresh,
    tokens: { accessHash: access.hash, accessExpiresAt: now + ACCESS_TOKEN_TTL_S * 1000, refreshHash: refresh.hash, grantTtlMs: GRANT_TTL_MS },
  }
}

const answer = (access: string, refresh: string): TokenAnswer => ({ access_token: access, token_type: 'Bearer', expires_in: ACCESS_TOKEN_TTL_S, refresh_token: refresh, scope: 'mcp' })

function refused(reply: Exclude<GrantReply, { status: 'ok' }>, what: string): OAuthError {
  switch (reply.status) {
    case 'reused':
      return new OAuthError('invalid_grant', `the ${what} was already used: every token of its grant is revoked`)
    case 'expired':
      return new OAuthError('invalid_grant', `the ${what} has expired`)
    case 'mismatch':
      return new OAuthError('invalid_grant', `the ${what} was issued for another client, redirect_uri, resource or code_verifier`)
    case 'not_found':
      return new OAuthError('invalid_grant', `unknown, expired or revoked ${what}`)
    case 'agent_ended':
      return new OAuthError('invalid_grant', `the agent this ${what}'s grant acts as is revoked or expired: the grant is ended`)
  }
}

/** grant_type=authorization_code: the code's one redemption (oauth-redeem.lua). */
export async function redeemCode(ctx: RedisContext, p: { code: string; clientId: string; redirectUri: string; codeVerifier: string; resource: string }): Promise<TokenAnswer> {
  const code = parseGrantToken(p.code, 'oac')
  if (!code) throw new OAuthError('invalid_grant', 'unknown, expired or revoked authorization code')
  const now = ctx.clock.now()
  const pair = newPair(code.accountId, code.grantId, now)
  const reply = await runOauthRedeem(ctx, {
    now,
    accountId: code.accountId,
    grantId: code.grantId,
    codeHash: code.secretHash,
    clientId: p.clientId,
    redirectUri: p.redirectUri,
    verifierChallenge: s256Challenge(p.codeVerifier),
    resource: p.resource,
    ...pair.tokens,
  })
  if (reply.status !== 'ok') throw refused(reply, 'authorization code')
  return answer(pair.access.value, pair.refresh.value)
}

/** grant_type=refresh_token: rotation with reuse detection (oauth-refresh.lua). */
export async function refreshGrant(ctx: RedisContext, p: { refreshToken: string; clientId: string }): Promise<TokenAnswer> {
  const rt = parseGrantToken(p.refreshToken, 'ort')
  if (!rt) throw new OAuthError('invalid_grant', 'unknown, expired or revoked refresh token')
  // The agent's hash is one of the script's keys: its id is read from the grant first (the script
  // checks the grant still names it).
  const agentId = await ctx.redis.hget(ctx.keys.oauthGrant(rt.accountId, rt.grantId), 'agent')
  if (!agentId) throw new OAuthError('invalid_grant', 'unknown, expired or revoked refresh token')
  const now = ctx.clock.now()
  const pair = newPair(rt.accountId, rt.grantId, now)
  const reply = await runOauthRefresh(ctx, { accountId: rt.accountId, grantId: rt.grantId, clientId: p.clientId, presentedHash: rt.secretHash, agentId, now, ...pair.tokens })
  if (reply.status !== 'ok') throw refused(reply, 'refresh token')
  return answer(pair.access.value, pair.refresh.value)
}

/** The agent an access token acts as, or null (malformed, unknown, expired, rotated away or revoked). */
export async function resolveAccessToken(ctx: RedisContext, bearer: string | undefined): Promise<Principal | null> {
  const at = parseGrantToken(bearer, 'oat')
  if (!at) return null
  const [hash, exp, agent, tok] = await ctx.redis.hmget(ctx.keys.oauthGrant(at.accountId, at.grantId), 'at', 'at_exp', 'agent', 'tok')
  if (!hash || !agent || !tok || !sameHex(hash, at.secretHash) || ctx.clock.now() >= Number(exp)) return null
  // The consent's agent is a top-level agent of the account: no ancestors.
  return { accountId: at.accountId, agentId: agent, tokenHash: tok, chain: [] }
}

/**
 * RFC 7009: revokes the grant of a token this service issued (an access or a refresh token; either
 * ends the whole grant). Anything else is ignored, as the RFC asks (the answer is 200 either way).
 */
export async function revokeToken(ctx: RedisContext, token: string): Promise<void> {
  const t = parseGrantToken(token, 'ort') ?? parseGrantToken(token, 'oat')
  if (!t) return
  const key = ctx.keys.oauthGrant(t.accountId, t.grantId)
  const [at, rt] = await ctx.redis.hmget(key, 'at', 'rt')
  if ((at && sameHex(at, t.secretHash)) || (rt && sameHex(rt, t.secretHash))) await ctx.redis.del(key, ctx.keys.oauthGrantUsed(t.accountId, t.grantId))
}

function sameHex(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex')
  const y = Buffer.from(b, 'hex')
  return x.length === y.length && timingSafeEqual(x, y)
}
