/**
 * Refund the debit of a failed call (refund.lua). Idempotent by call id: retried or raced refunds
 * apply once. errors: none thrown for "already refunded" — the caller gets `applied: false`.
 */
import { runRefund, type RefundArgs } from '../lua/refund'
import { chainOf } from '../redis/agent-chain'
import type { RedisContext } from '../redis/context'

/** What refund.lua takes, less what is read here: the clock's now and the agent's chain. */
export type RefundRequest = Omit<RefundArgs, 'now' | 'chain'>

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
