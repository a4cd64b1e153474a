/**
 * Sinks of the governance entries: `agent` (full agent row) and `account_policy` (the account's
 * policy fields). Both are projections, not logs: each entry carries the whole row and the version
 * Redis bumped when writing it, and a row is only ever replaced by a higher version. So a
 * redelivered entry (crash between commit and ack) is a no-op, and an older entry arriving after a
 * newer one (a stale entry reclaimed from a dead consumer) cannot roll the row back.
 */
import { sql } from 'drizzle-orm'
import type { Database } from '../db/client'
import { accountPolicies, agents } from '../db/schema'
import type { OutboxEntry, Sink } from '../ledger/outbox'

const at = (ms: string | undefined) => new Date(Number(ms))
const num = (v: string | undefined) => (v === undefined ? null : Number(v))
/** Field absent = null (no list); present = the patterns, possibly none. */
const list = (v: string | undefined) => (v === undefined ? null : v.split('\n').filter(Boolean))

/** ON CONFLICT cannot touch one row twice per statement: keep each key's highest version. */
function newest(entries: OutboxEntry[], key: (e: OutboxEntry) => string): OutboxEntry[] {
  const best = new Map<string, OutboxEntry>()
  for (const e of entries) {
    const k = key(e)
    const cur = best.get(k)
    if (!cur || Number(e.fields.v) > Number(cur.fields.v)) best.set(k, e)
  }
  return [...best.values()]
}

type Projection = typeof agents | typeof accountPolicies

/** Inserts the rows; an existing row takes the named columns only from a higher version. */
async function upsertNewer<T extends Projection>(
  tx: Database,
  table: T,
  target: T['_']['columns'][keyof T['_']['columns']],
  rows: T['$inferInsert'][],
  columns: (keyof T['$inferInsert'] & keyof T['_']['columns'])[],
): Promise<void> {
  const cols = table as unknown as Record<string, { name: string }>
  const set = Object.fromEntries(columns.map((c) => [c, sql.raw(`excluded.${cols[c as string]!.name}`)]))
  // A union of tables defeats drizzle's per-table insert typing; the rows were typed above.
  await (tx.insert(table) as any)
    .values(rows)
    .onConflictDoUpdate({ target, set, setWhere: sql`${table.version} < excluded.version` })
}

export const agentSink: Sink = async (tx: Database, entries) => {
  const rows = newest(entries, (e) => e.fields.agent!).map(({ fields: f }) => ({
    id: f.agent!,
    accountId: f.acct!,
    name: f.name!,
    state: f.state!,
    tokenHash: f.token!,
    dailyCap: num(f.daily_cap),
    allowlist: list(f.allow),
    perCallMax: num(f.per_call_max),
    version: Number(f.v),
    createdAt: at(f.created),
    updatedAt: at(f.at),
  }))
  await upsertNewer(tx, agents, agents.id, rows, ['name', 'state', 'dailyCap', 'allowlist', 'perCallMax', 'version', 'updatedAt'])
}

export const accountPolicySink: Sink = async (tx: Database, entries) => {
  const rows = newest(entries, (e) => e.fields.acct!).map(({ fields: f }) => ({
    accountId: f.acct!,
    dailyCap: num(f.daily_cap),
    allowlist: list(f.allow),
    balanceCap: num(f.balance_cap),
    version: Number(f.v),
    updatedAt: at(f.at),
  }))
  await upsertNewer(tx, accountPolicies, accountPolicies.accountId, rows, ['dailyCap', 'allowlist', 'balanceCap', 'version', 'updatedAt'])
}
