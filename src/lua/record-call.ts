/** record-call-6: files a finished call's metadata once (see its Lua header). */
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import { statusOf, unexpected } from './reply'

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
  recentCalls: number
  settledTtlS: number
}

export type RecordCallReply = { status: 'ok' } | { status: 'already_applied' }

export async function runRecordCall(ctx: RedisContext, a: RecordCallArgs): Promise<RecordCallReply> {
  const { keys } = ctx
  const shard = keys.shardOf(a.accountId)
  const idem = a.idempotency
  const reply = await ctx.scripts.recordCall(
    [
      keys.recentCalls(a.accountId),
      keys.stats(shard),
      keys.idempotency(a.accountId, a.agentId, idem?.key ?? null),
      keys.outbox(shard),
      keys.call(a.accountId, a.callId),
      keys.inflight(shard),
    ],
    [a.recordJson, a.callId, a.charged, a.organic ? '1' : '0', idem?.mode ?? '', idem?.mode === 'store' ? idem.replay : '', a.recentCalls, a.accountId, a.settledTtlS],
  )
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok' }
    case S.ALREADY_APPLIED:
      return { status: 'already_applied' }
    default:
      throw unexpected('record-call-6', reply)
  }
}
