/**
 * Refund the debit of a failed call (refund-7). Idempotent by call id: retried or raced refunds
 * apply once. errors: none thrown for "already refunded" — the caller gets `applied: false`.
 */
import { ScriptStatus as S } from '../redis/codes'
import type { LedgerContext } from './context'

export interface RefundRequest {
  accountId: string
  agentId: string | null
  callId: string
  /** The HKT day of the debit, so the refund lowers that day's spend. */
  day: number
  reason: string
}

export async function refund(ctx: LedgerContext, r: RefundRequest): Promise<{ applied: boolean; balance: number }> {
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
    [ctx.clock.now(), r.callId, r.accountId, r.reason],
  )
  return { applied: reply[0] === S.OK, balance: Number(reply[1]) }
}
