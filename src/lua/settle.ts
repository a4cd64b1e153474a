/**
 * settle-15: charges a metered call's real usage and releases the rest of its reservation, once; given
 * `file`, it also files the call (what record-call-6 does) in the same script.
 */
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import type { TokenCounts, UsageSource } from '../metering/usage'
import { num, statusOf, unexpected } from './reply'
import { chainOf } from '../ledger/chain'

export interface SettleArgs {
  now: number
  accountId: string
  agentId: string | null
  callId: string
  /** The HKT day of the debit: the release lowers that day's spend. */
  day: number
  tokens: TokenCounts
  source: UsageSource
  /** The agent's ancestors, parent first (CONTRACT §8); looked up (cached) when not given. */
  chain?: readonly string[]
  /** File the call too: the record as JSON minus its closing brace, `charged` and `uncharged` (the script appends them). */
  file?: { recordHead: string; organic: boolean; recentCalls: number; settledTtlS: number }
}

export type SettleReply =
  | { status: 'ok'; balance: number; charged: number; released: number; unchargedMicro: number }
  | { status: 'already_applied'; balance: number }
  | { status: 'not_found' }

export async function runSettle(ctx: RedisContext, a: SettleArgs): Promise<SettleReply> {
  const { keys } = ctx
  const shard = keys.shardOf(a.accountId)
  const chain = a.chain ?? (await chainOf(ctx, a.accountId, a.agentId))
  const reply = await ctx.scripts.settle(
    [
      keys.account(a.accountId),
      keys.call(a.accountId, a.callId),
      keys.spentToday(a.accountId, a.day),
      keys.agentSpentToday(a.accountId, a.agentId, a.day),
      keys.outbox(shard),
      keys.inflight(shard),
      keys.agent(a.accountId, a.agentId),
      // Slots past the chain repeat a key of the same hash slot; the script never touches them.
      ...[0, 1, 2].map((i) => (chain[i] ? keys.agent(a.accountId, chain[i]!) : keys.agent(a.accountId, a.agentId))),
      ...[0, 1, 2].map((i) => keys.agentSpentToday(a.accountId, chain[i] ?? a.agentId, a.day)),
      keys.recentCalls(a.accountId),
      keys.stats(shard),
    ],
    [
      a.now, a.callId, a.accountId, a.tokens.input, a.tokens.cached, a.tokens.output, a.source, chain.join(','),
      a.file?.recordHead ?? '', a.file?.organic ? '1' : '0', a.file?.recentCalls ?? 0, a.file?.settledTtlS ?? 0,
    ],
  )
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', balance: num(reply, 1), charged: num(reply, 2), released: num(reply, 3), unchargedMicro: num(reply, 4) }
    case S.ALREADY_APPLIED:
      return { status: 'already_applied', balance: num(reply, 1) }
    case S.NOT_FOUND:
      return { status: 'not_found' }
    default:
      throw unexpected('settle-15', reply)
  }
}
