/**
 * The reconciliation's history in Postgres (docs/api.md §13d): a run per day and provider, its rows
 * per model. A run of a day replaces that day's rows for the provider in one transaction, so a
 * retried or re-run day never shows two answers.
 */
import { and, asc, eq, gte, lte } from 'drizzle-orm'
import type { Database } from '../db/client'
import { providerBillRows, providerBillRuns } from '../db/schema'
import type { BillRow, RowStatus } from './compare'
import type { BillTokens } from './tokens'

export type RunStatus = 'ok' | 'drift' | 'unavailable'

export interface RunRecord {
  day: string
  provider: string
  status: RunStatus
  attempts: number
  retryAt: Date | null
  error: string | null
  checkedAt: Date
}

export interface StoredRow {
  day: string
  provider: string
  /** null: a run with no model on either side (nothing to compare), or unavailable with none of ours. */
  model: string | null
  ours: BillTokens
  theirs: BillTokens | null
  driftPct: number | null
  status: RowStatus
  unmeteredRequests: number
  /** Why the usage API was unavailable, from the run. */
  error: string | null
  checkedAt: Date
}

export async function saveRun(db: Database, run: RunRecord, rows: BillRow[], unmeteredRequests: number): Promise<void> {
  await db.transaction(async (tx) => {
    const where = and(eq(providerBillRows.day, run.day), eq(providerBillRows.provider, run.provider))
    await tx.delete(providerBillRows).where(where)
    if (rows.length > 0)
      await tx.insert(providerBillRows).values(
        rows.map((r) => ({
          day: run.day,
          provider: run.provider,
          model: r.model,
          oursInput: r.ours.input,
          oursCached: r.ours.cached,
          oursOutput: r.ours.output,
          theirsInput: r.theirs?.input ?? null,
          theirsCached: r.theirs?.cached ?? null,
          theirsOutput: r.theirs?.output ?? null,
          driftPct: r.driftPct,
          status: r.status,
          unmeteredRequests,
        })),
      )
    await tx
      .insert(providerBillRuns)
      .values(run)
      .onConflictDoUpdate({
        target: [providerBillRuns.day, providerBillRuns.provider],
        set: { status: run.status, attempts: run.attempts, retryAt: run.retryAt, error: run.error, checkedAt: run.checkedAt },
      })
  })
}

export async function runOf(db: Database, day: string, provider: string): Promise<RunRecord | null> {
  const [r] = await db.select().from(providerBillRuns).where(and(eq(providerBillRuns.day, day), eq(providerBillRuns.provider, provider)))
  return r ? { ...r, status: r.status as RunStatus } : null
}

/** Unavailable runs from `since` on: the days to ask again once their retry is due. */
export async function unavailableSince(db: Database, since: string): Promise<RunRecord[]> {
  const rows = await db
    .select()
    .from(providerBillRuns)
    .where(and(eq(providerBillRuns.status, 'unavailable'), gte(providerBillRuns.day, since)))
  return rows.map((r) => ({ ...r, status: r.status as RunStatus }))
}

/** Every run in [from, to] with its rows, oldest day first, then provider, then model. */
export async function listRows(db: Database, from: string, to: string): Promise<StoredRow[]> {
  const [runs, rows] = await Promise.all([
    db.select().from(providerBillRuns).where(and(gte(providerBillRuns.day, from), lte(providerBillRuns.day, to))).orderBy(asc(providerBillRuns.day), asc(providerBillRuns.provider)),
    db
      .select()
      .from(providerBillRows)
      .where(and(gte(providerBillRows.day, from), lte(providerBillRows.day, to)))
      .orderBy(asc(providerBillRows.day), asc(providerBillRows.provider), asc(providerBillRows.model)),
  ])
  const byRun = new Map<string, (typeof rows)[number][]>()
  for (const r of rows) {
    const k = `${r.day}|${r.provider}`
    const list = byRun.get(k)
    if (list) list.push(r)
    else byRun.set(k, [r])
  }
  const out: StoredRow[] = []
  for (const run of runs) {
    const mine = byRun.get(`${run.day}|${run.provider}`) ?? []
    const base = { day: run.day, provider: run.provider, error: run.error, checkedAt: run.checkedAt }
    if (mine.length === 0) {
      // A run shows even with nothing to compare, so the founder sees the day was checked (or could not be).
      out.push({ ...base, model: null, ours: { input: 0, cached: 0, output: 0 }, theirs: run.status === 'unavailable' ? null : { input: 0, cached: 0, output: 0 }, driftPct: run.status === 'unavailable' ? null : 0, status: run.status as RowStatus, unmeteredRequests: 0 })
      continue
    }
    for (const r of mine)
      out.push({
        ...base,
        model: r.model,
        ours: { input: r.oursInput, cached: r.oursCached, output: r.oursOutput },
        theirs: r.theirsInput === null ? null : { input: r.theirsInput, cached: r.theirsCached ?? 0, output: r.theirsOutput ?? 0 },
        driftPct: r.driftPct,
        status: r.status as RowStatus,
        unmeteredRequests: r.unmeteredRequests,
      })
  }
  return out
}
