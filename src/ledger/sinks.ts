/**
 * Where the ledger's own outbox entries land in Postgres (money entries, calls, accounts, owner
 * rotations); the other domains keep theirs beside them, and src/sinks.ts hands them all to the
 * write-behind. Every insert is idempotent on the entry's own id, so redelivery after a crash
 * between commit and ack changes nothing.
 */
import { eq, sql } from 'drizzle-orm'
import type { Database } from '../db/client'
import { accounts } from '../db/schema'
import { shardOfAccount } from '../redis/keys'
import { accountFields, moneyFields, MONEY_KINDS, ownerFields, writtenId, type Sink } from '../write-behind/outbox'
import { PoisonEntry } from '../write-behind/poison'

/**
 * One INSERT … SELECT FROM json_to_recordset per batch: the rows travel as a single JSON parameter.
 * Building a multi-row VALUES list through the query builder cost a third of the service's CPU per
 * paid call under load (bench/RESULTS.md); this keeps the same rows and the same ON CONFLICT.
 * `json`, not `jsonb`: the array is read once, so building its binary form first is wasted work
 * (250-row batches: 8.6–9.8 → 6.7–7.3 µs a row in Postgres, docs/decisions.md).
 * `record` types the JSON fields; `select` lists, per target column, the expression reading them.
 */
async function insertJsonRows(tx: Database, table: string, record: string, select: Record<string, string>, conflict: string, json: string, fresh = false): Promise<void> {
  const columns = Object.keys(select)
  const head = `insert into ${table} (${columns.join(', ')}) select ${Object.values(select).join(', ')} from json_to_recordset(`
  // ON CONFLICT probes the unique index before each insert (11–13% of a row's CPU in Postgres:
  // bench/pg-rows.ts --fresh): first deliveries skip it, and the unique index still refuses a
  // duplicate (outbox.ts, Sink).
  const tail = fresh ? '' : ` on conflict (${conflict}) do nothing`
  await tx.execute(sql`${sql.raw(head)}${json}${sql.raw(`::json) as x(${record})${tail}`)}`)
}

/** Identity selects: each column read from the JSON field of the same name. */
const same = (...names: string[]) => Object.fromEntries(names.map((n) => [n, n]))

const ledgerSink: Sink = (tx, entries, o) =>
  insertJsonRows(
    tx,
    'ledger_entries',
    'id text, account_id text, agent_id text, kind text, amount bigint, balance_after bigint, call_id text, ref_id text, target text, uncredited bigint, uncredited_reason text, at bigint, stream_id text, model text, tokens_in integer, tokens_cached integer, tokens_out integer, tokens_cache_write integer, tokens_cache_write_1h integer, mc_rem bigint',
    {
      ...same('id', 'account_id', 'agent_id', 'kind', 'amount', 'balance_after', 'call_id', 'ref_id', 'target', 'uncredited', 'uncredited_reason'),
      at: `timestamptz 'epoch' + at * interval '1 millisecond'`,
      stream_id: 'stream_id',
      ...same('model', 'tokens_in', 'tokens_cached', 'tokens_out', 'tokens_cache_write', 'tokens_cache_write_1h', 'mc_rem'),
    },
    'id',
    JSON.stringify(
      entries.map((e) => {
        const m = moneyFields(e)
        return {
          id: m.id,
          account_id: m.account,
          agent_id: m.agent,
          kind: m.kind,
          amount: m.amount,
          balance_after: m.balanceAfter,
          call_id: m.callId,
          ref_id: m.refId,
          target: m.target,
          uncredited: m.uncredited,
          // `reason` also names a refund's cause; it is the uncredited part's only beside `uncredited`.
          uncredited_reason: m.uncredited !== null ? m.reason : null,
          at: m.at,
          stream_id: writtenId(e),
          model: m.model,
          tokens_in: m.tokens?.input ?? null,
          tokens_cached: m.tokens?.cached ?? null,
          tokens_out: m.tokens?.output ?? null,
          tokens_cache_write: m.tokens?.cache_write ?? null,
          tokens_cache_write_1h: m.tokens?.cache_write_1h ?? null,
          mc_rem: m.remainder,
        }
      }),
    ),
    o?.fresh,
  )

/**
 * A call entry already carries its record as JSON (CallRecord plus account_id, written by
 * recordCall): the batch is those strings joined, with no parse and no re-serialisation.
 */
const callSink: Sink = (tx, entries, o) => {
  // A missing record would join to nothing (`[]`, or `[a,,b]` cut down to it when tried alone): a
  // write of no row, acked as committed. Poison instead, so the entry waits in the dead letters.
  for (const e of entries) if (!e.fields.rec) throw new PoisonEntry(`outbox: call entry ${e.fields.id ?? e.streamId} has no record`)
  return insertJsonRows(
    tx,
    'calls',
    'call_id text, account_id text, agent_id text, slug text, charged integer, refunded boolean, outcome text, http_status integer, latency_ms integer, at timestamptz, model text, tokens jsonb, reserved integer, uncharged integer, usage_source text, lane text',
    {
      ...same('call_id', 'account_id', 'agent_id', 'slug', 'charged'),
      refunded: 'refunded::int',
      ...same('outcome', 'http_status', 'latency_ms', 'at', 'model'),
      // A metered call's tokens (docs/api.md §7); absent on a flat call's record, null here.
      tokens_in: "(tokens->>'input')::int",
      tokens_cached: "(tokens->>'cached')::int",
      tokens_out: "(tokens->>'output')::int",
      tokens_cache_write: "(tokens->>'cache_write')::int",
      tokens_cache_write_1h: "(tokens->>'cache_write_1h')::int",
      ...same('reserved', 'uncharged', 'usage_source', 'lane'),
    },
    'call_id',
    `[${entries.map((e) => e.fields.rec!).join(',')}]`,
    o?.fresh,
  )
}

const accountSink: Sink = async (tx, entries) => {
  await tx
    .insert(accounts)
    .values(
      entries.map(accountFields).map((a) => ({
        id: a.account,
        email: a.email,
        publicRef: a.publicRef,
        origin: a.origin,
        referredBy: a.referrer,
        shard: shardOfAccount(a.account),
        ownerTokenHash: a.ownerTokenHash,
        createdAt: new Date(a.at),
      })),
    )
    .onConflictDoNothing({ target: accounts.id })
}

/**
 * A rotated owner token: the durable copy follows the newest hash (rotations are rare, row by row).
 * An update that matches no row (the account's own entry not in Postgres: dead-lettered, or a field
 * missing) is poison, not a no-op: acked, the rotation would be lost, and a rebuild would bring the
 * revoked token back.
 */
const ownerSink: Sink = async (tx, entries) => {
  for (const o of entries.map(ownerFields)) {
    if (!o.account || !o.ownerTokenHash) throw new PoisonEntry('outbox: owner entry without its account or token hash')
    const rows = await tx.update(accounts).set({ ownerTokenHash: o.ownerTokenHash }).where(eq(accounts.id, o.account)).returning({ id: accounts.id })
    if (rows.length === 0) throw new PoisonEntry(`outbox: owner entry of ${o.account}, an account Postgres does not hold`)
  }
}

export const LEDGER_SINKS: Record<string, Sink> = {
  ...Object.fromEntries(MONEY_KINDS.map((k) => [k, ledgerSink])),
  call: callSink,
  account: accountSink,
  owner: ownerSink,
}
