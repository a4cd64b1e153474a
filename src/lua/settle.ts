/**
 * settle.lua: charges a metered call's real usage and releases the rest of its reservation, once; given
 * `file`, it also files the call (what record-calls.lua does) in the same script. The settles one shard
 * asks for in a turn of the event loop go to Redis as one script (src/redis/turn-batch.ts, at the size
 * src/redis/scripts.ts declares; see the Lua header for why).
 * errors: a failed script rejects every settle of its batch; a chain that is not the call record's
 * rejects that settle only (nothing of it written).
 */
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import type { Keys } from '../redis/keys'
import type { TokenCounts, UsageSource } from '../metering/usage'
import { num, statusOf, unexpected, type Reply } from './reply'
import { chainOf } from '../redis/agent-chain'
import { scriptBatch } from '../redis/scripts'
import type { TurnBatch } from '../redis/turn-batch'
import { breakerWindowOfDebit } from './breaker-window'

export interface SettleArgs {
  now: number
  accountId: string
  agentId: string | null
  callId: string
  /** The HKT day of the debit: the release lowers that day's spend. */
  day: number
  tokens: TokenCounts
  source: UsageSource
  /** The agent's ancestors, parent first (docs/api.md §8); looked up (cached) when not given. */
  chain?: readonly string[]
  /** File the call too: the record as JSON minus its closing brace, `charged` and `uncharged` (the script appends them). */
  file?: { recordHead: string; organic: boolean; recentCalls: number; settledTtlS: number }
  /** The debit's instant: the release also comes off that minute's breaker count (lua/lib/breaker-window.lua). */
  at?: number
  /**
   * Called once this settle is in its batch, before Redis answers: the batch goes to the connection
   * before the event loop next handles a request (turn-batch.ts), so anything this instance does
   * for a later request runs after it.
   */
  onQueued?: () => void
  /** The run the call record names (docs/api.md §13c): it gets the release back. */
  runId?: string
}

export type SettleReply =
  | { status: 'ok'; balance: number; charged: number; released: number; unchargedMicro: number }
  | { status: 'already_applied'; balance: number }
  | { status: 'not_found' }

export async function runSettle(ctx: RedisContext, a: SettleArgs): Promise<SettleReply> {
  const chain = a.chain ?? (await chainOf(ctx, a.accountId, a.agentId))
  let b = batches.get(ctx)
  if (!b) batches.set(ctx, (b = scriptBatch<Queued, SettleReply>('settle', (_, calls) => runBatch(ctx, calls))))
  // Grouped by shard (one hash slot) and by the filing options a batch shares.
  const group = `${ctx.keys.shardOf(a.accountId)}|${a.file ? `${a.file.recentCalls}|${a.file.settledTtlS}` : ''}`
  // A settle the script refused alone (its chain is not the call's) is an Error in the batch's
  // answers: TurnBatch rejects that settle alone.
  const settled = b.add(group, { ...a, chain })
  a.onQueued?.()
  return settled
}

/** ARGV each call adds to settle.lua's batch (lua/settle.lua, `PER`), after the batch's own. */
export const SETTLE_ARGS_PER_CALL = 7
export const SETTLE_SHARED_ARGS = 3
/** Values of settle.lua's flat reply per call. */
const REPLY_PER_CALL = 5

type Queued = SettleArgs & { chain: readonly string[] }

/**
 * A call's keys and its shape argument (lua/settle.lua, ARGV j = 7): '' for the common call (the
 * owner's, organic or not filed, the provider's usage, no cache writes, no run), which sends 4 keys
 * and no more; each key or argument costs Redis ~1,000 instructions.
 */
function settleShape(keys: Keys, a: Queued): [string[], string] {
  const k = [keys.account(a.accountId), keys.call(a.accountId, a.callId), keys.spentToday(a.accountId, a.day), keys.recentCalls(a.accountId)]
  const organic = !a.file || a.file.organic
  const cw = a.tokens.cache_write ?? 0
  const cw1h = a.tokens.cache_write_1h ?? 0
  if (a.agentId === null && organic && a.source === 'provider' && !cw && !cw1h && !a.runId && a.chain.length === 0) return [k, '']
  let minute = ''
  if (a.agentId !== null) {
    const agentKey = keys.agent(a.accountId, a.agentId)
    const breaker = breakerWindowOfDebit(keys, a.accountId, a.agentId, a.at, agentKey)
    k.push(agentKey, breaker.key)
    minute = breaker.minute
  }
  for (const id of a.chain) k.push(keys.agent(a.accountId, id))
  if (a.runId) k.push(keys.run(a.accountId, a.runId))
  const shape = [organic ? '1' : '0', a.source, a.agentId === null ? '' : '1', minute, cw || cw1h ? `${cw},${cw1h}` : '', a.runId ?? '', a.chain.join(',')]
  return [k, shape.join('|')]
}

/** One batcher per Redis context (kept here, so that callers keep calling runSettle as before). */
const batches = new WeakMap<RedisContext, TurnBatch<Queued, SettleReply>>()

/** Every call of `calls` must be of one shard (one hash slot: one script on a cluster). Replies in order. */
async function runBatch(ctx: RedisContext, calls: readonly Queued[]): Promise<(SettleReply | Error)[]> {
  const { keys } = ctx
  const shard = keys.shardOf(calls[0]!.accountId)
  const file = calls.find((c) => c.file)?.file
  const k: string[] = [keys.outbox(shard), keys.inflight(shard), keys.stats(shard)]
  // `now` once a batch: only the date of an entry whose record has no `at` (lua/settle.lua).
  const argv: (string | number)[] = [file?.recentCalls ?? 0, file?.settledTtlS ?? 0, calls[0]!.now]
  for (const a of calls) {
    const [callKeys, shape] = settleShape(keys, a)
    k.push(...callKeys)
    argv.push(a.callId, a.accountId, a.tokens.input, a.tokens.cached, a.tokens.output, a.file?.recordHead ?? '', shape)
  }
  const reply = (await ctx.scripts.settle(k, argv)) as unknown as Reply
  if (!Array.isArray(reply) || reply.length !== REPLY_PER_CALL * calls.length) throw unexpected('settle.lua', reply)
  return calls.map((_, i) => {
    // The i-th call's 5 values of the one flat reply (lua/settle.lua): its status, or an error text for it alone.
    const r = reply.slice(REPLY_PER_CALL * i, REPLY_PER_CALL * (i + 1))
    if (typeof r[0] === 'string') return new Error(r[0])
    switch (statusOf(r)) {
      case S.OK:
        return { status: 'ok', balance: num(r, 1), charged: num(r, 2), released: num(r, 3), unchargedMicro: num(r, 4) }
      case S.ALREADY_APPLIED:
        return { status: 'already_applied', balance: num(r, 1) }
      case S.NOT_FOUND:
        return { status: 'not_found' }
      default:
        return unexpected('settle.lua', r)
    }
  })
}
