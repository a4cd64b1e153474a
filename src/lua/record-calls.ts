/** record-calls.lua: files a batch of one shard's finished calls, each once (see its Lua header). */
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

/** Every call of `calls` must be of `shard` (one hash slot: one script on a cluster). Replies in order. */
export async function runRecordCalls(ctx: RedisContext, shard: Shard, calls: readonly RecordCallArgs[], o: RecordBatchOptions): Promise<RecordCallReply[]> {
  const { keys } = ctx
  const k: string[] = [keys.stats(shard), keys.outbox(shard), keys.inflight(shard)]
  const argv: (string | number)[] = [o.recentCalls, o.settledTtlS, calls.length]
  // The few calls with an Idempotency-Key send its record and answer after every call's own part
  // (see the Lua header): the common call sends 2 keys and 3 arguments.
  const idemKeys: string[] = []
  const idemArgv: (string | number)[] = []
  for (const [i, c] of calls.entries()) {
    k.push(keys.recentCalls(c.accountId), keys.call(c.accountId, c.callId))
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
  return reply.map((status) => {
    switch (status) {
      case S.OK:
        return { status: 'ok' }
      case S.ALREADY_APPLIED:
        return { status: 'already_applied' }
      default:
        throw unexpected('record-calls.lua', reply)
    }
  })
}
