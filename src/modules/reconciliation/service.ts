/**
 * The founder's view of the reconciliation with the providers' bills, and a run on demand
 * (docs/api.md §13d). Days are UTC days; a range is at most 366 days.
 * errors: BAD_REQUEST (field `from`, `to` or `day`), CONFLICT (another instance is running it).
 */
import { ApiError } from '../../errors'
import { addDays, DAY_MS, isUtcDate } from '../../provider-bill/days'
import { listRows, type StoredRow } from '../../provider-bill/store'
import type { Services } from '../../services'

const MAX_RANGE_DAYS = 366

const dayField = (field: string, v: string | undefined, def: string): string => {
  if (v === undefined) return def
  if (!isUtcDate(v)) throw new ApiError('BAD_REQUEST', { field, expected: 'a UTC day, YYYY-MM-DD' })
  return v
}

const rowView = (r: StoredRow) => ({
  day: r.day,
  provider: r.provider,
  model: r.model,
  ours: r.ours,
  theirs: r.theirs,
  difference: r.theirs ? { input: r.theirs.input - r.ours.input, cached: r.theirs.cached - r.ours.cached, output: r.theirs.output - r.ours.output } : null,
  drift_pct: r.driftPct,
  status: r.status,
  unmetered_requests: r.unmeteredRequests,
  error: r.status === 'unavailable' ? r.error : null,
  checked_at: r.checkedAt.toISOString(),
})

export async function listReconciliation(s: Services, q: { from?: string; to?: string }) {
  const to = dayField('to', q.to, s.billCheck.dueDay())
  const from = dayField('from', q.from, addDays(to, -29))
  if (from > to) throw new ApiError('BAD_REQUEST', { field: 'from', expected: `a day on or before to (${to})` })
  if ((Date.parse(to) - Date.parse(from)) / DAY_MS >= MAX_RANGE_DAYS) throw new ApiError('BAD_REQUEST', { field: 'from', expected: `at most ${MAX_RANGE_DAYS} days before to` })
  const rows = await listRows(s.db.db, from, to)
  return { from, to, threshold_pct: s.cfg.RECONCILE_DRIFT_PCT, providers: s.billCheck.providers.map((p) => p.id), days: rows.map(rowView) }
}

export async function runReconciliation(s: Services, body: { day?: string } | undefined) {
  const due = s.billCheck.dueDay()
  const day = dayField('day', body?.day, due)
  // A day not over yet (or not settled) would compare half a day: refused, not stored.
  if (day > due) throw new ApiError('BAD_REQUEST', { field: 'day', expected: `a UTC day on or before ${due} (an hour past its end)` })
  const runs = await s.billCheck.runNow(day)
  if (runs === null) throw new ApiError('CONFLICT', { reason: 'another instance is running the reconciliation; try again in a minute' })
  const rows = await listRows(s.db.db, day, day)
  return { day, runs: runs.map((r) => ({ provider: r.provider, status: r.status, error: r.error })), days: rows.map(rowView) }
}
