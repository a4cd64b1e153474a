/** rotate-owner-2: the owner-token swap, a compare-and-set on the account's owner hash (see its Lua header). */
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import { statusOf, unexpected } from './reply'

export interface RotateOwnerArgs {
  now: number
  accountId: string
  /** The owner hash being replaced: the one the caller was admitted with, or read. */
  expectedHash: string
  newHash: string
}

export type RotateOwnerReply = { status: 'ok' } | { status: 'unauthorized' }

export async function runRotateOwner(ctx: RedisContext, a: RotateOwnerArgs): Promise<RotateOwnerReply> {
  const { keys } = ctx
  const reply = await ctx.scripts.rotateOwner([keys.account(a.accountId), keys.outbox(keys.shardOf(a.accountId))], [a.now, a.accountId, a.expectedHash, a.newHash])
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok' }
    case S.UNAUTHORIZED:
      return { status: 'unauthorized' }
    default:
      throw unexpected('rotate-owner-2', reply)
  }
}
