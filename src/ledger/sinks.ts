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
import { copyRows, type CopyValue } from '../db/copy'
import { accountFields, moneyFields, MONEY_KINDS, ownerFields, writtenId, type OutboxEntry, type Sink } from '../write-behind/outbox'
import { PoisonEntry } from '../write-behind/poison'

/**
 * A hot append-only table the flusher writes every round (a paid call's ledger entry and call
 * record): its columns in the order its row builder gives them, each with its type for the insert.
 */
interface HotTable {
  name: string
  /** The unique column a redelivered row conflicts on. */
  key: string
  columns: readonly (readonly [name: string, type: string])[]
}

/**
 * A round of first deliveries (`fresh`) goes in by COPY: no conflict check (no row of such an entry
 * can be in Postgres yet, and the unique index still refuses a duplicate: outbox.ts, Sink), no
 * statement to parse or plan, no JSON to read — 17 → 12.7 µs of Postgres CPU a row
 * (bench/RESULTS.md, "Postgres per paid call"). Otherwise, and where the driver has no COPY
 * (PGlite), one INSERT … SELECT FROM json_to_recordset with ON CONFLICT DO NOTHING, from the same
 * rows: a redelivered entry is written once.
 */
async function writeRows(tx: Database, table: HotTable, rows: CopyValue[][], fresh = false): Promise<void> {
  const names = table.columns.map(([n]) => n)
  if (fresh && (await copyRows(tx, table.name, names, rows))) return
  // `json`, not `jsonb`: the array is read once, so building its binary form first is wasted work.
  const json = JSON.stringify(rows.map((r) => Object.fromEntries(names.map((n, i) => [n, r[i]]))))
  const record = table.columns.map(([n, type]) => `${n} ${type}`).join(', ')
  const tail = fresh ? '' : ` on conflict (${table.key}) do nothing`
  await tx.execute(sql`${sql.raw(`insert into ${table.name} (${names.join(', ')}) select ${names.join(', ')} from json_to_recordset(`)}${json}${sql.raw(`::json) as x(${record})${tail}`)}`)
}

const LEDGER_TABLE: HotTable = {
  name: 'ledger_entries',
  key: 'id',
  columns: [
    ['id', 'text'],
    ['account_id', 'text'],
    ['agent_id', 'text'],
    ['kind', 'text'],
    ['amount', 'bigint'],
    ['balance_after', 'bigint'],
    ['call_id', 'text'],
    ['ref_id', 'text'],
    ['target', 'text'],
    ['uncredited', 'bigint'],
    ['uncredited_reason', 'text'],
    ['at', 'timestamptz'],
    ['stream_id', 'text'],
    ['model', 'text'],
    ['tokens_in', 'integer'],
    ['tokens_cached', 'integer'],
    ['tokens_out', 'integer'],
    ['tokens_cache_write', 'integer'],
    ['tokens_cache_write_1h', 'integer'],
    ['mc_rem', 'bigint'],
  ],
}

/** A money entry's ledger row, in LEDGER_TABLE's column order. */
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
    // Epoch ms as an instant (an `at` that is no number throws here: the entry is poison).
    new Date(m.at).toISOString(),
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

const ledgerSink: Sink = (tx, entries, o) => writeRows(tx, LEDGER_TABLE, entries.map(ledgerRow), o?.fresh)

const CALLS_TABLE: HotTable = {
  name: 'calls',
  key: 'call_id',
  columns: [
    ['call_id', 'text'],
    ['account_id', 'text'],
    ['agent_id', 'text'],
    ['slug', 'text'],
    ['charged', 'integer'],
    ['refunded', 'integer'],
    ['outcome', 'text'],
    ['http_status', 'integer'],
    ['latency_ms', 'integer'],
    ['at', 'timestamptz'],
    ['model', 'text'],
    ['tokens_in', 'integer'],
    ['tokens_cached', 'integer'],
    ['tokens_out', 'integer'],
    ['tokens_cache_write', 'integer'],
    ['tokens_cache_write_1h', 'integer'],
    ['reserved', 'integer'],
    ['uncharged', 'integer'],
    ['usage_source', 'text'],
  ],
}

/**
 * A call entry carries its record as JSON (CallRecord plus account_id, written by recordCall); its
 * row, in CALLS_TABLE's column order. A record that is no JSON object throws (poison).
 */
function callRow(e: OutboxEntry): CopyValue[] {
  // A missing record would be a write of no row, acked as committed. Poison instead, so the entry
  // waits in the dead letters.
  if (!e.fields.rec) throw new PoisonEntry(`outbox: call entry ${e.fields.id ?? e.streamId} has no record`)
  const r = JSON.parse(e.fields.rec) as Record<string, CopyValue> & { tokens?: Record<string, CopyValue> | null }
  if (r === null || typeof r !== 'object' || Array.isArray(r)) throw new PoisonEntry(`outbox: call entry ${e.fields.id ?? e.streamId} has a record that is no object`)
  // A metered call's tokens (docs/api.md §7); absent on a flat call's record, null here.
  const t = r.tokens ?? null
  const refunded = typeof r.refunded === 'boolean' ? Number(r.refunded) : r.refunded
  return [r.call_id, r.account_id, r.agent_id, r.slug, r.charged, refunded, r.outcome, r.http_status, r.latency_ms, r.at, r.model, t?.input, t?.cached, t?.output, t?.cache_write, t?.cache_write_1h, r.reserved, r.uncharged, r.usage_source]
}

const callSink: Sink = (tx, entries, o) => writeRows(tx, CALLS_TABLE, entries.map(callRow), o?.fresh)

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
