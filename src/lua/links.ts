/**
 * One-time links (vault key entry, account recovery): claim-link.lua uses a link up for exactly one
 * caller, release-link.lua gives it back. The link key is given whole: which family it belongs to
 * (keys.vaultLink, keys.recoveryLink) is the caller's business. See the Lua headers.
 */
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import { statusOf, str, unexpected } from './reply'

export type ClaimLinkReply = { status: 'ok'; accountId: string; provider: string } | { status: 'link_invalid' } | { status: 'link_used' }

export async function runClaimLink(ctx: RedisContext, a: { linkKey: string; now: number; claimId: string; usedMarkerMs: number }): Promise<ClaimLinkReply> {
  const reply = await ctx.scripts.claimLink([a.linkKey], [a.now, a.claimId, a.usedMarkerMs])
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', accountId: str(reply, 1), provider: str(reply, 2) }
    case S.LINK_USED:
      return { status: 'link_used' }
    case S.LINK_INVALID:
      return { status: 'link_invalid' }
    default:
      throw unexpected('claim-link.lua', reply)
  }
}

export type ReleaseLinkReply = { status: 'ok'; released: boolean }

export async function runReleaseLink(ctx: RedisContext, a: { linkKey: string; claimId: string }): Promise<ReleaseLinkReply> {
  const reply = await ctx.scripts.releaseLink([a.linkKey], [a.claimId])
  if (statusOf(reply) !== S.OK) throw unexpected('release-link.lua', reply)
  return { status: 'ok', released: Number(reply[1]) === 1 }
}
