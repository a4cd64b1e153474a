/** rotate-owner.lua: the owner-token swap, a compare-and-set on the account's owner hash (see its Lua header). */
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import { statusOf, unexpected } from './reply'

export interface RotateOwnerArgs {
  now: number
  accountId: string
  /** The owner hash being replaced: the one the caller was admitted with, or read. */
  expectedHash: string
  newHash: string
  /** A recovery: when its link was issued (a recovery completed since voids it). Absent for a bearer rotation. */
  linkIssuedAt?: number
}

export type RotateOwnerReply = { status: 'ok' } | { status: 'unauthorized' } | { status: 'link_invalid' }

export async function runRotateOwner(ctx: RedisContext, a: RotateOwnerArgs): Promise<RotateOwnerReply> {
  const { keys } = ctx
  const reply = await ctx.scripts.rotateOwner([keys.account(a.accountId), keys.outbox(keys.shardOf(a.accountId))], [
    a.now,
    a.accountId,
    a.expectedHash,
    a.newHash,
    ...(a.linkIssuedAt === undefined ? [] : [a.linkIssuedAt]),
  ])
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok' }
    case S.UNAUTHORIZED:
      return { status: 'unauthorized' }
    case S.LINK_INVALID:
      return { status: 'link_invalid' }
    default:
      throw unexpected('rotate-owner.lua', reply)
  }
}
