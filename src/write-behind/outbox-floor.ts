/**
 * After Redis came back empty: every shard's outbox stream is set past the newest stream id
 * Postgres holds, before the rebuilt ledger writes to it. A stream's ids are the order the
 * statement reads an account's entries in (src/ledger/statement.ts), and an empty Redis starts a
 * stream's ids from its own clock: on a host whose clock is behind the lost one's, new entries would
 * otherwise sort before entries already flushed. A stream already past it keeps its own ids.
 * errors: Postgres or Redis failing (the rebuild that calls it fails and is retried).
 */
import { sql } from 'drizzle-orm'
import type { Database } from '../db/client'
import { SHARDS } from '../redis/keys'
import type { RedisContext } from '../redis/context'
import { ensureOutboxGroups } from './flusher'
import { rowsOf } from '../db/rows'

/** The newest stream id of the flushed ledger, or null when it holds none. */
export async function newestFlushedId(db: Database): Promise<string | null> {
  const rows = rowsOf<{ stream_id: string }>(
    await db.execute(sql`select stream_id from ledger_entries order by split_part(stream_id, '-', 1)::bigint desc, split_part(stream_id, '-', 2)::bigint desc limit 1`),
  )
  return rows[0]?.stream_id ?? null
}

export async function advanceOutboxes(ctx: RedisContext, db: Database): Promise<string | null> {
  const floor = await newestFlushedId(db)
  if (floor === null) return null
  await ensureOutboxGroups(ctx)
  await Promise.all(
    Array.from({ length: SHARDS }, async (_, s) => {
      try {
        await ctx.redis.xsetid(ctx.keys.outbox(s), floor)
      } catch (e) {
        // Its newest entry is past the floor already: its ids stay ahead of every flushed row.
        if (!String(e).includes('smaller than the target stream top item')) throw e
      }
    }),
  )
  return floor
}
