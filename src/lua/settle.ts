/** settle-6: charges a metered call's real usage and releases the rest of its reservation, once. */
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import type { TokenCounts, UsageSource } from '../metering/usage'
import { num, statusOf, unexpected } from './reply'

export interface SettleArgs {
  now: number
  accountId: string
  agentId: string | null
  callId: string
  /** The HKT day of the debit: the release lowers that day's spend. */
  day: number
  tokens: TokenCounts
  source: UsageSource
}

export type SettleReply =
  | { status: 'ok'; balance: number; charged: number; released: number; unchargedMicro: number }
  | { status: 'already_applied'; balance: number }
  | { status: 'not_found' }

export async function runSettle(ctx: RedisContext, a: SettleArgs): Promise<SettleReply> {
  const { keys } = ctx
  const shard = keys.shardOf(a.accountId)
  const reply = await ctx.scripts.settle(
    [
      keys.account(a.accountId),
      keys.call(a.accountId, a.callId),
      keys.spentToday(a.accountId, a.day),
      keys.agentSpentToday(a.accountId, a.agentId, a.day),
      keys.outbox(shard),
      keys.inflight(shard),
    ],
    [a.now, a.callId, a.accountId, a.tokens.input, a.tokens.cached, a.tokens.output, a.source],
  )
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', balance: num(reply, 1), charged: num(reply, 2), released: num(reply, 3), unchargedMicro: num(reply, 4) }
    case S.ALREADY_APPLIED:
      return { status: 'already_applied', balance: num(reply, 1) }
    case S.NOT_FOUND:
      return { status: 'not_found' }
    default:
      throw unexpected('settle-6', reply)
  }
}
