/** refund.lua: gives back one call's debit, at most once per call id (see its Lua header). */
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import { breakerWindowOfDebit } from './breaker-window'
import { num, statusOf, unexpected } from './reply'

export interface RefundArgs {
  now: number
  accountId: string
  agentId: string | null
  callId: string
  /** The HKT day of the debit: the refund lowers that day's account spend (an agent's: the call record's day). */
  day: number
  reason: string
  /** The sweeper's sweep instant: refund only if the call's deadline was not moved past it. */
  dueBy?: number
  /** The agent's ancestors, parent first (docs/api.md §8): the refund gives back along them too. */
  chain: readonly string[]
  /** The debit's instant: the refund also comes off the breaker's count of that minute (lua/lib/breaker-window.lua). */
  at?: number
  /** The run the call record names (docs/api.md §13c): it gets the price back. */
  runId?: string
}

export type RefundReply =
  | { status: 'ok'; balance: number; amount: number }
  | { status: 'already_applied'; balance: number }
  | { status: 'not_found' }
  | { status: 'not_due' }

export async function runRefund(ctx: RedisContext, a: RefundArgs): Promise<RefundReply> {
  const { keys } = ctx
  const agentKey = keys.agent(a.accountId, a.agentId)
  const breaker = breakerWindowOfDebit(keys, a.accountId, a.agentId, a.at, agentKey)
  const reply = await ctx.scripts.refund(
    [
      keys.account(a.accountId),
      keys.call(a.accountId, a.callId),
      keys.spentToday(a.accountId, a.day),
      keys.unpricedRequestsToday(a.accountId, a.day),
      keys.outbox(keys.shardOf(a.accountId)),
      keys.inflight(keys.shardOf(a.accountId)),
      agentKey,
      // Slots past the chain repeat a key of the same hash slot; the script never touches them.
      ...[0, 1, 2].map((i) => (a.chain[i] ? keys.agent(a.accountId, a.chain[i]!) : agentKey)),
      breaker.key,
      a.runId ? keys.run(a.accountId, a.runId) : agentKey,
    ],
    [a.now, a.callId, a.accountId, a.reason, a.dueBy ?? '', a.chain.join(','), breaker.minute],
  )
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', balance: num(reply, 1), amount: num(reply, 2) }
    case S.ALREADY_APPLIED:
      return { status: 'already_applied', balance: num(reply, 1) }
    case S.NOT_FOUND:
      return { status: 'not_found' }
    case S.NOT_DUE:
      return { status: 'not_due' }
    default:
      throw unexpected('refund.lua', reply)
  }
}
