/**
 * The daily reconciliation with the providers' bills (docs/api.md §13d). Every instance looks every
 * RECONCILE_CHECK_MS; the one that takes the Redis lock (SET NX PX, renewed while it runs) runs
 * what is due: the previous UTC day of each reconciled provider once it has settled (an hour past
 * midnight UTC: the providers' reports and our flusher catch up), and each unavailable day whose
 * retry is due (backoff 5 min doubling to 6 h, for 7 days). A run compares the provider's usage API
 * with the house lane's metered calls in Postgres and keeps the result; drift raises
 * `reconcile_drift:<provider>` (alarm.ts). An unavailable usage API is never drift.
 * errors / metrics: a run's outcome goes to `onRun` (pab_reconcile_runs_total); a run that fails on
 * our side (Postgres down) is logged and tried again on the next look.
 */
import { randomBytes } from 'node:crypto'
import type { Catalog } from '../catalog/catalog'
import type { Database } from '../db/client'
import type { Log } from '../log'
import type { RedisContext } from '../redis/context'
import { anthropicUsage } from './anthropic-usage'
import { compareDay, type BillRow } from './compare'
import { addDays, DAY_MS, utcDate } from './days'
import { openaiUsage } from './openai-usage'
import { ourSide } from './ours'
import { reconciledProviders, type ReconciledProvider } from './providers'
import { runOf, saveRun, unavailableSince, type RunStatus } from './store'
import { utcDay, UsageUnavailable, type UsageReader } from './usage-api'

/** How long after a UTC day ends it is reconciled. */
export const SETTLE_MS = 3_600_000
const RETRY_FIRST_MS = 5 * 60_000
const RETRY_MAX_MS = 6 * 3_600_000
/** An unavailable day is asked again for this many days after it. */
export const RETRY_DAYS = 7
const LOCK_MS = 120_000

const READERS: Record<ReconciledProvider['dialect'], UsageReader> = { openai: openaiUsage, anthropic: anthropicUsage }

export const retryDelayMs = (attempts: number) => Math.min(RETRY_FIRST_MS * 2 ** Math.max(0, attempts - 1), RETRY_MAX_MS)

export interface BillCheckDeps {
  db: Database
  ctx: RedisContext
  catalog: Catalog
  env: Record<string, string | undefined>
  thresholdPct: number
  checkMs: number
  log: Pick<Log, 'info' | 'warn' | 'error'>
  onRun?: (provider: string, status: RunStatus) => void
  /** Told when a run stored new rows (the alarm's cache). */
  onStored?: () => void
}

export interface RunResult {
  provider: string
  day: string
  status: RunStatus
  error: string | null
  rows: BillRow[]
}

export class BillCheck {
  readonly providers: ReconciledProvider[]
  private timer: ReturnType<typeof setInterval> | null = null
  private running: Promise<unknown> | null = null

  constructor(private d: BillCheckDeps) {
    this.providers = reconciledProviders(d.catalog, d.env)
  }

  start(): void {
    if (this.providers.length === 0 || this.timer) return
    this.timer = setInterval(() => void this.tick(), this.d.checkMs)
    this.timer.unref?.()
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.running?.catch(() => {})
  }

  /** The last UTC day due now (yesterday, once an hour of today has passed). */
  dueDay(now = this.d.ctx.clock.now()): string {
    return utcDate(now - SETTLE_MS - DAY_MS)
  }

  /** One look: runs what is due, under the lock; false when another instance holds it. */
  async tick(): Promise<boolean> {
    if (this.providers.length === 0) return true
    return this.locked(async () => {
      const now = this.d.ctx.clock.now()
      const day = this.dueDay(now)
      for (const p of this.providers) if (!(await runOf(this.d.db, day, p.id))) await this.runDay(p, day)
      const retries = await unavailableSince(this.d.db, addDays(day, -RETRY_DAYS))
      for (const r of retries) {
        const p = this.providers.find((x) => x.id === r.provider)
        if (p && r.retryAt !== null && r.retryAt.getTime() <= now) await this.runDay(p, r.day)
      }
    }).catch((e) => {
      this.d.log.error('reconcile_failed', { error: e instanceof Error ? e.message : String(e) })
      return true
    })
  }

  /** The founder's run of one day for every reconciled provider, now, whatever ran before; null when another instance holds the lock. */
  async runNow(day: string): Promise<RunResult[] | null> {
    let out: RunResult[] = []
    const took = await this.locked(async () => {
      out = []
      for (const p of this.providers) out.push(await this.runDay(p, day))
    })
    return took ? out : null
  }

  private async locked(work: () => Promise<void>): Promise<boolean> {
    const { redis, keys } = this.d.ctx
    const lock = keys.billCheckLock()
    const me = randomBytes(8).toString('hex')
    if ((await redis.set(lock, me, 'PX', LOCK_MS, 'NX')) !== 'OK') return false
    const renew = setInterval(() => void redis.pexpire(lock, LOCK_MS).catch(() => {}), LOCK_MS / 3)
    const run = work()
    this.running = run
    try {
      await run
      return true
    } finally {
      clearInterval(renew)
      // Not atomic, and need not be: a lock lost meanwhile (past its TTL) was taken by a run that
      // writes the same rows, and a day's rows are replaced whole.
      if ((await redis.get(lock).catch(() => null)) === me) await redis.del(lock).catch(() => {})
    }
  }

  private async runDay(p: ReconciledProvider, day: string): Promise<RunResult> {
    const now = this.d.ctx.clock.now()
    const span = utcDay(day)
    let theirs: Awaited<ReturnType<UsageReader>> | null = null
    let error: string | null = null
    try {
      theirs = await READERS[p.dialect](p, span)
    } catch (e) {
      // Any failure to read the bill is the provider's side: retried, never drift.
      error = e instanceof UsageUnavailable ? e.message : `unexpected: ${e instanceof Error ? e.message : String(e)}`
    }
    const ours = await ourSide(this.d.db, p.slugs, span.startS, span.endS)
    const rows = compareDay({ ours: ours.tokens, theirs, metered: p.metered, unmeteredRequests: ours.unmeteredRequests, thresholdPct: this.d.thresholdPct })
    const status: RunStatus = theirs === null ? 'unavailable' : rows.some((r) => r.status === 'drift') ? 'drift' : 'ok'
    const before = status === 'unavailable' ? await runOf(this.d.db, day, p.id) : null
    const attempts = status === 'unavailable' ? (before?.status === 'unavailable' ? before.attempts : 0) + 1 : 0
    await saveRun(
      this.d.db,
      { day, provider: p.id, status, attempts, retryAt: status === 'unavailable' ? new Date(now + retryDelayMs(attempts)) : null, error, checkedAt: new Date(now) },
      rows,
      ours.unmeteredRequests,
    )
    this.d.onStored?.()
    this.d.onRun?.(p.id, status)
    if (status === 'drift')
      this.d.log.warn('reconcile_drift', {
        provider: p.id,
        day,
        models: rows.filter((r) => r.status === 'drift').map((r) => ({ model: r.model, ours: r.ours, theirs: r.theirs, drift_pct: r.driftPct })),
      })
    else if (status === 'unavailable') this.d.log.warn('reconcile_unavailable', { provider: p.id, day, error, attempts })
    else this.d.log.info('reconciled', { provider: p.id, day, models: rows.length })
    return { provider: p.id, day, status, error, rows }
  }
}
