/** record-calls.lua: files a batch of finished calls, each once (see its Lua header). */
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import type { Shard } from '../redis/keys'
import { unexpected } from './reply'

export interface RecordCallArgs {
  accountId: string
  callId: string
  agentId: string | null
  /** The call record as filed (activity, outbox, Postgres), already JSON. */
  recordJson: string
  /** Credits the call keeps (0 when refunded). */
  charged: number
  /** Succeeded and not refunded: counts in the public "organic calls" counter. */
  organic: boolean
  /** What happens to the call's Idempotency-Key: none, store this answer, or free the key. */
  idempotency: { key: string; mode: 'store'; replay: string } | { key: string; mode: 'release' } | null
}

export type RecordCallReply = { status: 'ok' } | { status: 'already_applied' }

export interface RecordBatchOptions {
  recentCalls: number
  settledTtlS: number
}

/**
 * Files `calls` in one script, a group of calls per shard (see the Lua header); replies in the order
 * of `calls`. On a Cluster every call must be of one shard (every key of a script in one hash slot):
 * src/paid-request/call-filing.ts batches so.
 */
export async function runRecordCalls(ctx: RedisContext, calls: readonly RecordCallArgs[], o: RecordBatchOptions): Promise<RecordCallReply[]> {
  const { keys } = ctx
  // The calls' places in `calls`, by shard in the order first seen: a shard's calls stay in order.
  const byShard = new Map<Shard, number[]>()
  for (let i = 0; i < calls.length; i++) {
    const s = keys.shardOf(calls[i]!.accountId)
    const group = byShard.get(s)
    if (group) group.push(i)
    else byShard.set(s, [i])
  }
  const k: string[] = []
  const argv: (string | number)[] = [o.recentCalls, o.settledTtlS, byShard.size]
  /** The script's i-th call (from 0) is calls[order[i]]. */
  const order: number[] = []
  for (const [s, group] of byShard) {
    argv.push(group.length)
    k.push(keys.stats(s), keys.outbox(s), keys.inflight(s))
    for (const i of group) {
      const c = calls[i]!
      k.push(keys.recentCalls(c.accountId), keys.call(c.accountId, c.callId))
      order.push(i)
    }
  }
  // The few calls with an Idempotency-Key send its record and answer after every call's own part
  // (see the Lua header): the common call sends 2 keys and 3 arguments.
  const idemKeys: string[] = []
  const idemArgv: (string | number)[] = []
  for (let i = 0; i < order.length; i++) {
    const c = calls[order[i]!]!
    // The in-flight member (debit.lua's) in one argument: the script takes the call id from it.
    argv.push(c.recordJson, `${c.accountId}|${c.callId}`, c.organic ? c.charged : '')
    const idem = c.idempotency
    if (!idem) continue
    idemKeys.push(keys.idempotency(c.accountId, c.agentId, idem.key))
    if (idem.mode === 'store') idemArgv.push(i + 1, idem.replay)
    else idemArgv.push(-(i + 1))
  }
  k.push(...idemKeys)
  argv.push(...idemArgv)
  const reply = await ctx.scripts.recordCalls(k, argv)
  if (!Array.isArray(reply) || reply.length !== calls.length) throw unexpected('record-calls.lua', reply)
  const out: RecordCallReply[] = new Array(calls.length)
  for (let i = 0; i < reply.length; i++) {
    switch (reply[i]) {
      case S.OK:
        out[order[i]!] = { status: 'ok' }
        break
      case S.ALREADY_APPLIED:
        out[order[i]!] = { status: 'already_applied' }
        break
      default:
        throw unexpected('record-calls.lua', reply)
    }
  }
  return out
}
