/**
 * Where the ledger's own outbox entries land in Postgres (money entries, calls, accounts, owner
 * rotations); the other domains keep theirs beside them, and src/sinks.ts hands them all to the
 * write-behind. A redelivered entry (a crash between commit and ack) is inserted with ON CONFLICT
 * DO NOTHING on its own id, so it changes nothing.
 */
import { eq, sql } from 'drizzle-orm'
import { isoInstants } from '../clock'
import type { Database } from '../db/client'
import { accounts } from '../db/schema'
import { shardOfAccount } from '../redis/keys'
import { copyRows, type CopyValue } from '../db/copy'
import { accountFields, moneyFields, MONEY_KINDS, ownerFields, writtenId, type OutboxEntry, type Sink } from '../write-behind/outbox'
import { PoisonEntry } from '../write-behind/poison'

/*
 * A round of first deliveries (`fresh`) goes into the two hot append-only tables by COPY
 * (src/db/copy.ts): no conflict check (no row of such an entry can be in Postgres yet, and the
 * unique index still refuses a duplicate: outbox.ts, Sink), no statement to parse or plan, no JSON
 * to read (bench/RESULTS.md, "Postgres per paid call (issue 42)"). `copyRows` answers false where
 * the driver has no COPY (PGlite), and the sink inserts.
 */

/**
 * Otherwise one INSERT … SELECT FROM json_to_recordset per batch, ON CONFLICT DO NOTHING: a
 * redelivered entry is written once. The rows travel as a single JSON parameter; `json`, not
 * `jsonb`: the array is read once, so building its binary form first is wasted work.
 * `record` types the JSON fields; `select` lists, per target column, the expression reading them.
 */
async function insertJsonRows(tx: Database, table: string, record: string, select: Record<string, string>, conflict: string, json: string, fresh = false): Promise<void> {
  const columns = Object.keys(select)
  const head = `insert into ${table} (${columns.join(', ')}) select ${Object.values(select).join(', ')} from json_to_recordset(`
  // Without COPY (PGlite), a fresh round still skips the conflict probe.
  const tail = fresh ? '' : ` on conflict (${conflict}) do nothing`
  await tx.execute(sql`${sql.raw(head)}${json}${sql.raw(`::json) as x(${record})${tail}`)}`)
}

/** Identity selects: each column read from the JSON field of the same name. */
const same = (...names: string[]) => Object.fromEntries(names.map((n) => [n, n]))

/** ledger_entries' columns, in the order of ledgerRow. */
const LEDGER_COLUMNS = [
  'id',
  'account_id',
  'agent_id',
  'kind',
  'amount',
  'balance_after',
  'call_id',
  'ref_id',
  'target',
  'uncredited',
  'uncredited_reason',
  'at',
  'stream_id',
  'model',
  'tokens_in',
  'tokens_cached',
  'tokens_out',
  'tokens_cache_write',
  'tokens_cache_write_1h',
  'mc_rem',
] as const

/** Epoch ms as an ISO instant: a flush's debits mostly share their turn's millisecond. */
const instantOf = isoInstants()

/** A money entry's row, in LEDGER_COLUMNS' order: the one builder of both ways in. */
function ledgerRow(e: OutboxEntry): CopyValue[] {
  const m = moneyFields(e)
  return [
    m.id,
    m.account,
    m.agent,
    m.kind,
    m.amount,
    m.balanceAfter,
    m.callId,
    m.refId,
    m.target,
    m.uncredited,
    // `reason` also names a refund's cause; it is the uncredited part's only beside `uncredited`.
    m.uncredited !== null ? m.reason : null,
    // Epoch ms as an instant; an `at` that is no time throws here (RangeError: the entry is poison).
    instantOf(m.at),
    writtenId(e),
    m.model,
    m.tokens?.input,
    m.tokens?.cached,
    m.tokens?.output,
    m.tokens?.cache_write,
    m.tokens?.cache_write_1h,
    m.remainder,
  ]
}

const ledgerSink: Sink = async (tx, entries, o) => {
  const rows = entries.map(ledgerRow)
  if (o?.fresh && (await copyRows(tx, 'ledger_entries', LEDGER_COLUMNS, rows))) return
  await insertJsonRows(
    tx,
    'ledger_entries',
    'id text, account_id text, agent_id text, kind text, amount bigint, balance_after bigint, call_id text, ref_id text, target text, uncredited bigint, uncredited_reason text, at timestamptz, stream_id text, model text, tokens_in integer, tokens_cached integer, tokens_out integer, tokens_cache_write integer, tokens_cache_write_1h integer, mc_rem bigint',
    same(...LEDGER_COLUMNS),
    'id',
    JSON.stringify(rows.map((r) => Object.fromEntries(LEDGER_COLUMNS.map((c, i) => [c, r[i]])))),
    o?.fresh,
  )
}

/** calls' columns, in the order of callRow. */
const CALL_COLUMNS = [
  'call_id',
  'account_id',
  'agent_id',
  'slug',
  'charged',
  'refunded',
  'outcome',
  'http_status',
  'latency_ms',
  'at',
  'model',
  'tokens_in',
  'tokens_cached',
  'tokens_out',
  'tokens_cache_write',
  'tokens_cache_write_1h',
  'reserved',
  'uncharged',
  'usage_source',
  'lane',
] as const

type CallJson = Record<string, CopyValue> & { tokens?: Record<string, CopyValue> | null }

/**
 * A call record's row for COPY, read as the insert's json_to_recordset reads it. A record that is
 * no JSON object throws: the fresh round fails, and the insert below (where Postgres itself
 * refuses it) finds the entry and dead-letters it with Postgres' reason.
 */
function callRow(e: OutboxEntry): CopyValue[] {
  const r = JSON.parse(e.fields.rec!) as CallJson
  if (r === null || typeof r !== 'object' || Array.isArray(r)) throw new TypeError(`outbox: call entry ${e.fields.id ?? e.streamId}: its record is no object`)
  const t = r.tokens !== null && typeof r.tokens === 'object' && !Array.isArray(r.tokens) ? r.tokens : null
  const refunded = typeof r.refunded === 'boolean' ? Number(r.refunded) : r.refunded
  return [r.call_id, r.account_id, r.agent_id, r.slug, r.charged, refunded, r.outcome, r.http_status, r.latency_ms, r.at, r.model, t?.input, t?.cached, t?.output, t?.cache_write, t?.cache_write_1h, r.reserved, r.uncharged, r.usage_source, r.lane]
}

/**
 * A call entry already carries its record as JSON (CallRecord plus account_id, written by
 * recordCall): the insert's batch is those strings joined, with no parse and no re-serialisation.
 */
const callSink: Sink = async (tx, entries, o) => {
  // A missing record would join to nothing (`[]`, or `[a,,b]` cut down to it when tried alone): a
  // write of no row, acked as committed. Poison instead, so the entry waits in the dead letters.
  for (const e of entries) if (!e.fields.rec) throw new PoisonEntry(`outbox: call entry ${e.fields.id ?? e.streamId} has no record`)
  if (o?.fresh && (await copyRows(tx, 'calls', CALL_COLUMNS, entries.map(callRow)))) return
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
