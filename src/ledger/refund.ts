/**
 * Refund the debit of a failed call (refund-7). Idempotent by call id: retried or raced refunds
 * apply once. errors: none thrown for "already refunded" — the caller gets `applied: false`.
 */
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'

export interface RefundRequest {
  accountId: string
  agentId: string | null
  callId: string
  /** The HKT day of the debit, so the refund lowers that day's spend. */
  day: number
  reason: string
  /**
   * The sweeper's refund of a call it found past its deadline at this instant: applies only if the
   * deadline was not moved since (a lease renewal), else `notDue`.
   */
  dueBy?: number
}

export interface RefundResult {
  applied: boolean
  balance: number
  /** Only with `dueBy`: the call's lease was renewed, nothing was refunded. */
  notDue: boolean
}

export async function refund(ctx: RedisContext, r: RefundRequest): Promise<RefundResult> {
  const { keys } = ctx
  const reply = await ctx.scripts.refund(
    [
      keys.account(r.accountId),
      keys.call(r.accountId, r.callId),
      keys.spentToday(r.accountId, r.day),
      keys.agentSpentToday(r.accountId, r.agentId, r.day),
      keys.unpricedRequestsToday(r.accountId, r.day),
      keys.outbox(keys.shardOf(r.accountId)),
      keys.inflight(keys.shardOf(r.accountId)),
    ],
    [ctx.clock.now(), r.callId, r.accountId, r.reason, r.dueBy ?? ''],
  )
  return { applied: reply[0] === S.OK, balance: Number(reply[1]), notDue: reply[0] === S.NOT_DUE }
}
