/**
 * Dead letters: outbox entries Postgres refused for their own data (docs/operations.md). The
 * flusher moves each one, with the error, to its shard's dead-letter stream (dead-letter.lua), so
 * every other entry still commits; the founder lists them, replays one after fixing the cause
 * (replay-dead-letter.lua puts it back in the outbox) or discards it.
 *
 * A dead letter's public id names its shard and its stream id: `dl_07_1712345678901-0`.
 */
import { SHARDS, type Shard } from '../redis/keys'
import { runDeadLetter, runReplayDeadLetter } from '../lua/dead-letters'
import type { RedisContext } from '../redis/context'
import { parseOutboxEntry } from './outbox'

export interface DeadLetter {
  id: string
  shard: number
  /** The entry's kind (`account`, `debit`, `event`, …). */
  kind: string
  /** Why Postgres refused it: SQLSTATE and message. */
  error: string
  /** The entry's fields as its script wrote them; a packed debit's as the debit entry it stands for (outbox.ts). */
  entry: Record<string, string>
  /** When it was dead-lettered (ISO 8601). */
  at: string
  /** Its stream id in the outbox it came from. */
  source_id: string
}

const ID = /^dl_(\d{2})_(\d{1,20}-\d{1,20})$/

function parseId(id: string): { shard: Shard; streamId: string } | null {
  const m = ID.exec(id)
  if (!m || Number(m[1]) >= SHARDS) return null
  return { shard: Number(m[1]), streamId: m[2]! }
}

const publicId = (shard: Shard, streamId: string) => `dl_${String(shard).padStart(2, '0')}_${streamId}`

function decode(shard: Shard, streamId: string, raw: string[]): DeadLetter {
  const own: Record<string, string> = {}
  const entry: Record<string, string> = {}
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const k = raw[i]!
    if (k.startsWith('f:')) entry[k.slice(2)] = raw[i + 1]!
    else own[k] = raw[i + 1]!
  }
  // A packed debit is listed unpacked, as every reader of the outbox sees it (its own id, amount, target).
  // A batch's (`packed_debits`) is one dead letter of several debits, replayed or discarded whole:
  // listed as written, its `d` one debit a line (acct|agent|amount|bal|call|at|target).
  const unpacked = entry.kind === 'packed_debit' ? parseOutboxEntry(streamId, Object.entries(entry).flat()) : []
  const shown = unpacked.length === 1 ? unpacked[0]!.fields : PACKED_CALLS.has(entry.kind ?? '') ? packedCallsShown(streamId, entry) : entry
  return {
    id: publicId(shard, streamId),
    shard,
    kind: shown.kind ?? '',
    error: own.error ?? '',
    entry: shown,
    at: new Date(Number(own.at ?? 0)).toISOString(),
    source_id: own.src ?? '',
  }
}

/** Entries of several calls: record-calls.lua's `filed_calls` (`packed_calls` before), settle.lua's `packed_charged_calls`. */
const PACKED_CALLS = new Set(['filed_calls', 'packed_calls', 'packed_charged_calls'])

/**
 * A batch of calls (PACKED_CALLS) is buried and replayed whole: listed as that one entry, with the
 * ids of the calls it holds beside its packed field (`ids`, comma-separated; absent when a line does
 * not unpack, the likely reason it was refused).
 */
function packedCallsShown(streamId: string, entry: Record<string, string>): Record<string, string> {
  const calls = parseOutboxEntry(streamId, Object.entries(entry).flat()).filter((e) => e.kind === 'call')
  if (calls.length === 0) return entry
  return { ...entry, ids: calls.map((e) => e.fields.id).join(',') }
}

/** Moves one outbox entry to the dead letters; false when it had already left the outbox. */
export async function buryEntry(ctx: RedisContext, shard: Shard, group: string, streamId: string, error: string): Promise<boolean> {
  return (await runDeadLetter(ctx, { shard, group, streamId, error, now: Date.now() })).status === 'moved'
}

/** The oldest `limit` dead letters of every shard, oldest first. */
export async function listDeadLetters(ctx: RedisContext, limit: number): Promise<DeadLetter[]> {
  const perShard = await Promise.all(
    Array.from({ length: SHARDS }, async (_, s) => (await ctx.redis.xrange(ctx.keys.deadLetters(s), '-', '+', 'COUNT', limit)).map(([id, raw]) => decode(s, id, raw))),
  )
  return perShard
    .flat()
    .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0))
    .slice(0, limit)
}

export async function countDeadLetters(ctx: RedisContext): Promise<number> {
  const lens = await Promise.all(Array.from({ length: SHARDS }, (_, s) => ctx.redis.xlen(ctx.keys.deadLetters(s))))
  return lens.reduce((a, n) => a + n, 0)
}

/** Puts the entry back into its outbox; the new outbox stream id, or null for an unknown id. */
export async function replayDeadLetter(ctx: RedisContext, id: string): Promise<string | null> {
  const p = parseId(id)
  if (!p) return null
  const reply = await runReplayDeadLetter(ctx, p)
  return reply.status === 'replayed' ? reply.outboxId : null
}

/** Drops a dead letter for good; false for an unknown id. */
export async function discardDeadLetter(ctx: RedisContext, id: string): Promise<boolean> {
  const p = parseId(id)
  if (!p) return false
  return (await ctx.redis.xdel(ctx.keys.deadLetters(p.shard), p.streamId)) === 1
}
