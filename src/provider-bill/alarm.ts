/**
 * The drift alarm (docs/api.md §13d): a reconciled provider with a `drift` row among the last
 * ALARM_DAYS reconciled days holds `reconcile_drift:<provider>` — in GET /admin/alarms with both
 * figures per model, in /status (public: the day and the percent, not the token counts), and in the
 * `pab_reconcile_drift` gauge. It is read from Postgres, so every instance shows the same alarm
 * whichever ran the job; a re-run of the day that agrees clears it. Cached a few seconds: /status
 * is polled.
 */
import { and, desc, eq, gte, inArray } from 'drizzle-orm'
import type { Database } from '../db/client'
import { providerBillRows, providerBillRuns } from '../db/schema'
import type { DegradedReason } from '../health'
import { addDays } from './days'
import type { BillTokens } from './tokens'

export const ALARM_DAYS = 7
const CACHE_MS = 5_000

export interface DriftAlarmView {
  kind: 'reconcile_drift'
  reason: string
  provider: string
  /** The newest day with drift, and when it was checked. */
  day: string
  since: string
  threshold_pct: number
  models: { day: string; model: string; ours: BillTokens; theirs: BillTokens; drift_pct: number }[]
}

export class DriftAlarm {
  private cached: { at: number; views: Promise<DriftAlarmView[]> } | null = null

  constructor(
    private d: {
      db: Database
      providers: () => string[]
      /** The last day due now (BillCheck.dueDay). */
      dueDay: () => string
      thresholdPct: number
      now: () => number
    },
  ) {}

  /** A run stored rows: the next read goes to Postgres. */
  invalidate(): void {
    this.cached = null
  }

  list(): Promise<DriftAlarmView[]> {
    const now = this.d.now()
    if (this.cached && now - this.cached.at < CACHE_MS) return this.cached.views
    const views = this.read()
    this.cached = { at: now, views }
    views.catch(() => (this.cached = null))
    return views
  }

  async reasons(): Promise<DegradedReason[]> {
    return (await this.list()).map((a) => {
      const newest = a.models.filter((m) => m.day === a.day)
      return {
        reason: a.reason,
        detail: `the provider's usage report disagrees with our metered ledger by more than ${a.threshold_pct}% on ${a.day} (${newest.length} model(s), up to ${Math.max(...newest.map((m) => m.drift_pct))}%): see GET /admin/reconciliation`,
      }
    })
  }

  private async read(): Promise<DriftAlarmView[]> {
    const providers = this.d.providers()
    if (providers.length === 0) return []
    const since = addDays(this.d.dueDay(), -(ALARM_DAYS - 1))
    const rows = await this.d.db
      .select({ r: providerBillRows, checkedAt: providerBillRuns.checkedAt })
      .from(providerBillRows)
      .innerJoin(providerBillRuns, and(eq(providerBillRuns.day, providerBillRows.day), eq(providerBillRuns.provider, providerBillRows.provider)))
      .where(and(eq(providerBillRows.status, 'drift'), gte(providerBillRows.day, since), inArray(providerBillRows.provider, providers)))
      .orderBy(desc(providerBillRows.day), providerBillRows.model)
    const byProvider = new Map<string, DriftAlarmView>()
    for (const { r, checkedAt } of rows) {
      let v = byProvider.get(r.provider)
      if (!v) {
        v = { kind: 'reconcile_drift', reason: `reconcile_drift:${r.provider}`, provider: r.provider, day: r.day, since: checkedAt.toISOString(), threshold_pct: this.d.thresholdPct, models: [] }
        byProvider.set(r.provider, v)
      }
      v.models.push({
        day: r.day,
        model: r.model,
        ours: { input: r.oursInput, cached: r.oursCached, output: r.oursOutput },
        theirs: { input: r.theirsInput ?? 0, cached: r.theirsCached ?? 0, output: r.theirsOutput ?? 0 },
        drift_pct: r.driftPct ?? 0,
      })
    }
    return [...byProvider.values()].sort((a, b) => a.provider.localeCompare(b.provider))
  }
}
