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
import { accountPolicyFields, agentFields, type Sink } from '../write-behind/outbox'

/** Field absent = null (no list); present = the patterns, possibly none. */
const list = (v: string | null) => (v === null ? null : v.split('\n').filter(Boolean))

/** ON CONFLICT cannot touch one row twice per statement: keep each key's highest version. */
function newest<T extends { version: number }>(rows: T[], key: (r: T) => string): T[] {
  const best = new Map<string, T>()
  for (const r of rows) {
    const k = key(r)
    const cur = best.get(k)
    if (!cur || r.version > cur.version) best.set(k, r)
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
  const rows = newest(entries.map(agentFields), (a) => a.agent).map((a) => ({
    id: a.agent,
    accountId: a.account,
    name: a.name,
    state: a.state,
    tokenHash: a.tokenHash,
    dailyCap: a.dailyCap,
    allowlist: list(a.allow),
    perCallMax: a.perCallMax,
    parentId: a.parent,
    depth: a.depth,
    budget: a.budget,
    expiresAt: a.expires === null ? null : new Date(a.expires),
    version: a.version,
    createdAt: new Date(a.created),
    updatedAt: new Date(a.at),
  }))
  await upsertNewer(tx, agents, agents.id, rows, ['name', 'state', 'dailyCap', 'allowlist', 'perCallMax', 'budget', 'expiresAt', 'version', 'updatedAt'])
}

export const accountPolicySink: Sink = async (tx: Database, entries) => {
  const rows = newest(entries.map(accountPolicyFields), (p) => p.account).map((p) => ({
    accountId: p.account,
    dailyCap: p.dailyCap,
    allowlist: list(p.allow),
    balanceCap: p.balanceCap,
    thresholds: p.thresholds,
    version: p.version,
    updatedAt: new Date(p.at),
  }))
  await upsertNewer(tx, accountPolicies, accountPolicies.accountId, rows, ['dailyCap', 'allowlist', 'balanceCap', 'thresholds', 'version', 'updatedAt'])
}
