/** oauth-redeem.lua and oauth-refresh.lua: an authorization code's one redemption and a refresh token's rotation (see their Lua headers). */
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import { statusOf, str, unexpected } from './reply'

export type GrantReply =
  | { status: 'ok'; agentId: string; agentTokenHash: string }
  | { status: 'not_found' }
  | { status: 'reused' }
  | { status: 'expired' }
  | { status: 'mismatch' }
  | { status: 'agent_ended' }

export interface NewTokens {
  accessHash: string
  accessExpiresAt: number
  refreshHash: string
  grantTtlMs: number
}

export interface RedeemArgs extends NewTokens {
  now: number
  accountId: string
  grantId: string
  codeHash: string
  clientId: string
  redirectUri: string
  /** BASE64URL(SHA-256(code_verifier)). */
  verifierChallenge: string
  resource: string
}

export async function runOauthRedeem(ctx: RedisContext, a: RedeemArgs): Promise<GrantReply> {
  const { keys } = ctx
  const reply = await ctx.scripts.oauthRedeem(
    [keys.oauthCode(a.accountId, a.codeHash), keys.oauthGrant(a.accountId, a.grantId), keys.oauthGrantUsed(a.accountId, a.grantId)],
    [a.now, a.clientId, a.redirectUri, a.verifierChallenge, a.resource, a.accessHash, a.accessExpiresAt, a.refreshHash, a.grantTtlMs],
  )
  return grantReply('oauth-redeem.lua', reply)
}

export interface RefreshArgs extends NewTokens {
  accountId: string
  grantId: string
  clientId: string
  presentedHash: string
  /** The agent the grant names, as read from it (the script checks it still does). */
  agentId: string
  now: number
}

export async function runOauthRefresh(ctx: RedisContext, a: RefreshArgs): Promise<GrantReply> {
  const { keys } = ctx
  const reply = await ctx.scripts.oauthRefresh(
    [keys.oauthGrant(a.accountId, a.grantId), keys.oauthGrantUsed(a.accountId, a.grantId), keys.agent(a.accountId, a.agentId)],
    [a.clientId, a.presentedHash, a.accessHash, a.accessExpiresAt, a.refreshHash, a.grantTtlMs, a.agentId, a.now],
  )
  return grantReply('oauth-refresh.lua', reply)
}

function grantReply(script: string, reply: Awaited<ReturnType<RedisContext['scripts']['oauthRedeem']>>): GrantReply {
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', agentId: str(reply, 1), agentTokenHash: str(reply, 2) }
    case S.NOT_FOUND:
      return { status: 'not_found' }
    case S.GRANT_REUSED:
      return { status: 'reused' }
    case S.GRANT_EXPIRED:
      return { status: 'expired' }
    case S.GRANT_MISMATCH:
      return { status: 'mismatch' }
    case S.GRANT_AGENT_ENDED:
      return { status: 'agent_ended' }
    default:
      throw unexpected(script, reply)
  }
}
