/**
 * Refund the debit of a failed call (refund.lua). Idempotent by call id: retried or raced refunds
 * apply once. errors: none thrown for "already refunded" — the caller gets `applied: false`.
 */
import { runRefund } from '../lua/refund'
import { chainOf } from '../redis/agent-chain'
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
  /** The debit's instant (the call record's `at`): the refund comes off that minute's breaker count too. */
  at?: number
  /** The run the call record names (docs/api.md §13c): it gets the price back. */
  runId?: string
}

export interface RefundResult {
  applied: boolean
  balance: number
  /** Only with `dueBy`: the call's lease was renewed, nothing was refunded. */
  notDue: boolean
}

export async function refund(ctx: RedisContext, r: RefundRequest): Promise<RefundResult> {
  const chain = await chainOf(ctx, r.accountId, r.agentId)
  const reply = await runRefund(ctx, { now: ctx.clock.now(), ...r, chain })
  const balance = reply.status === 'ok' || reply.status === 'already_applied' ? reply.balance : 0
  return { applied: reply.status === 'ok', balance, notDue: reply.status === 'not_due' }
}
