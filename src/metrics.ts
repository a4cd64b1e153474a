/**
 * Prometheus metrics (prom-client), served as text by GET /metrics. One registry per Services, so
 * two apps in one test process never mix their numbers.
 *
 * What the paid path pays: a few counter increments in memory per request, nothing else. Money is
 * counted where it becomes durable — in the flusher's observer, after the Postgres commit — so each
 * ledger entry is counted once across all instances, whichever instance wrote it. The outbox lag
 * is read from Redis only when Prometheus scrapes.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import { FEATURES } from './alarms/not-configured'
import type { Flusher } from './write-behind/flusher'
import { MONEY_KINDS, type OutboxEntry } from './write-behind/outbox'

const MONEY = new Set<string>(MONEY_KINDS)

export class Metrics {
  readonly registry = new Registry()

  /** pab_http_requests_total and pab_http_request_duration_seconds, counted through httpSeries. */
  readonly httpRequests: Counter<'method' | 'route' | 'status'>
  readonly httpDuration: Histogram<'method' | 'route'>
  private readonly http = new Map<string, HttpSeries>()
  readonly apiErrors = new Counter({
    name: 'pab_api_errors_total',
    help: 'Structured error answers, by error code',
    labelNames: ['code'] as const,
    registers: [this.registry],
  })
  /** Children for every feature exist from the start, so an alert on any increase sees the first one. */
  readonly notConfigured = new Counter({
    name: 'pab_not_configured_total',
    help: 'Requests refused with NOT_CONFIGURED, by the feature whose setting is missing',
    labelNames: ['feature'] as const,
    registers: [this.registry],
  })
  readonly rateLimited = new Counter({
    name: 'pab_rate_limit_rejections_total',
    help: 'Requests refused with RATE_LIMITED, by route template',
    labelNames: ['route'] as const,
    registers: [this.registry],
  })
  /** For the proxy: bytes relayed, `direction` = upstream (request body) or downstream (response body). */
  readonly proxyBytes = new Counter({
    name: 'pab_proxy_bytes_total',
    help: 'Bytes relayed by the passthrough proxy, by provider and direction',
    labelNames: ['provider', 'direction'] as const,
    registers: [this.registry],
  })

  readonly ledgerEntries = new Counter({
    name: 'pab_ledger_entries_total',
    help: 'Money entries committed to Postgres, by kind (grant, debit, refund, referral, topup, reversal)',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  })
  readonly ledgerCredits = new Counter({
    name: 'pab_ledger_credits_total',
    help: 'Credits moved by committed entries, by kind (absolute value)',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  })
  readonly debits = new Counter({ name: 'pab_debits_total', help: 'Debits committed to the durable ledger', registers: [this.registry] })
  readonly refunds = new Counter({ name: 'pab_refunds_total', help: 'Refunds committed to the durable ledger', registers: [this.registry] })
  readonly creditsHonored = new Counter({
    name: 'pab_credits_honored_total',
    help: 'Credits kept by successful, non-refunded calls and proxy requests (the public credits_honored)',
    registers: [this.registry],
  })
  readonly organicCalls = new Counter({
    name: 'pab_organic_calls_total',
    help: 'Successful, non-refunded calls and proxy requests (the public organic_calls_routed)',
    registers: [this.registry],
  })
  readonly flushLag = new Histogram({
    name: 'pab_flush_latency_seconds',
    help: 'From the money write in Redis to its commit in Postgres, per outbox entry',
    buckets: FLUSH_BUCKETS,
    registers: [this.registry],
  })

  /** The reconciliation with the providers' bills (docs/api.md §13d): runs by their outcome, counted where they ran. */
  readonly reconcileRuns = new Counter({
    name: 'pab_reconcile_runs_total',
    help: "Reconciliation runs of one provider's day, by provider and outcome (ok, drift, unavailable)",
    labelNames: ['provider', 'status'] as const,
    registers: [this.registry],
  })

  constructor() {
    for (const feature of FEATURES) this.notConfigured.inc({ feature }, 0)
    const series = () => this.http.values()
    this.httpRequests = new Counter({
      name: 'pab_http_requests_total',
      help: 'HTTP requests answered, by method, route template and status',
      labelNames: ['method', 'route', 'status'] as const,
      registers: [this.registry],
      collect() {
        for (const x of series()) x.foldRequests(this)
      },
    })
    this.httpDuration = new Histogram({
      name: 'pab_http_request_duration_seconds',
      help: 'Time to the response head, by method and route template',
      labelNames: ['method', 'route'] as const,
      buckets: HTTP_BUCKETS,
      registers: [this.registry],
      collect() {
        for (const x of series()) x.foldDuration(this)
      },
    })
  }

  /**
   * The HTTP series of one method, route template and status, counted per request in plain numbers
   * and handed to prom-client when scraped: its labelled inc and observe cost ~2.3 µs a request
   * (issue 42). Routes are the app's route patterns ('unmatched' for the rest): a small, fixed set.
   */
  httpSeries(method: string, route: string, status: number): HttpSeries {
    // Under load one series answers most requests in a row: it is found without a key built and hashed.
    const last = this.lastHttp
    if (last !== null && last.status === status && last.route === route && last.method === method) return last
    const key = `${method} ${route} ${status}`
    let x = this.http.get(key)
    if (!x) this.http.set(key, (x = new HttpSeries(method, route, status)))
    return (this.lastHttp = x)
  }
  private lastHttp: HttpSeries | null = null

  /**
   * `pab_reconcile_drift{provider}`: the models drifting in the alarm's window, read at scrape from
   * what every instance reads (Postgres), 0 for each reconciled provider without drift.
   */
  watchBillDrift(providers: string[], drifting: () => Promise<{ provider: string; models: unknown[] }[]>): void {
    new Gauge({
      name: 'pab_reconcile_drift',
      help: "Models whose token counts disagree with the provider's usage report beyond RECONCILE_DRIFT_PCT (last 7 reconciled days); -1 when unreadable",
      labelNames: ['provider'] as const,
      registers: [this.registry],
      async collect() {
        const views = await drifting().catch(() => null)
        for (const provider of providers) this.set({ provider }, views === null ? -1 : (views.find((v) => v.provider === provider)?.models.length ?? 0))
      },
    })
  }

  /** Counts every batch the flusher committed; registers the scrape-time gauges of its lag. */
  watchFlusher(flusher: Flusher): void {
    flusher.observe(async (entries) => this.countCommitted(entries))
    let counted = { batches: 0, failures: 0 }
    const delta = (key: 'batches' | 'failures') => {
      const now = flusher.stats()[key]
      const d = now - counted[key]
      counted = { ...counted, [key]: now }
      return Math.max(0, d)
    }
    new Counter({
      name: 'pab_flush_batches_total',
      help: 'Outbox batches committed to Postgres and acked by this instance',
      registers: [this.registry],
      collect() {
        this.inc(delta('batches'))
      },
    })
    new Counter({
      name: 'pab_flush_failures_total',
      help: 'Flush rounds that failed (Postgres or Redis unavailable); the entries wait and are retried',
      registers: [this.registry],
      collect() {
        this.inc(delta('failures'))
      },
    })
    let lag: Promise<{ entries: number; oldest_ms: number }> | null = null
    // Both gauges read one lag query per scrape.
    const readLag = () => (lag ??= flusher.lag().finally(() => setTimeout(() => (lag = null), 0)))
    new Gauge({
      name: 'pab_outbox_entries',
      help: 'Ledger and activity entries waiting in the outbox streams (all shards)',
      registers: [this.registry],
      async collect() {
        this.set((await readLag().catch(() => ({ entries: -1 }))).entries)
      },
    })
    new Gauge({
      name: 'pab_outbox_oldest_seconds',
      help: 'Age of the oldest entry waiting in the outbox',
      registers: [this.registry],
      async collect() {
        this.set((await readLag().catch(() => ({ oldest_ms: -1000 }))).oldest_ms / 1000)
      },
    })
    // The same lag under the names the alerting rules use (docs/operations.md), in entries and ms.
    new Gauge({
      name: 'pab_ledger_lag_entries',
      help: 'Ledger and activity entries not yet committed to Postgres (all outbox streams)',
      registers: [this.registry],
      async collect() {
        this.set((await readLag().catch(() => ({ entries: -1 }))).entries)
      },
    })
    new Gauge({
      name: 'pab_ledger_lag_oldest_ms',
      help: 'Age in ms of the oldest entry not yet committed to Postgres',
      registers: [this.registry],
      async collect() {
        this.set((await readLag().catch(() => ({ oldest_ms: -1 }))).oldest_ms)
      },
    })
    new Gauge({
      name: 'pab_dead_letters',
      help: 'Outbox entries Postgres refused, waiting for the founder (GET /admin/dead-letters)',
      registers: [this.registry],
      async collect() {
        this.set(await flusher.deadLetters().catch(() => -1))
      },
    })
  }

  /** Process CPU, memory, event-loop delay (prom-client's defaults); the entry point turns them on. */
  withProcessMetrics(): this {
    collectDefaultMetrics({ register: this.registry, prefix: 'pab_' })
    return this
  }

  /**
   * One batch of committed entries into the counters. The sums are taken over the batch first and
   * each counter is moved once per batch, not once per entry (issue 17: a flushed paid call is two
   * entries, and prom-client hashes the labels of every inc).
   */
  private countCommitted(entries: OutboxEntry[]): void {
    const now = Date.now()
    let organicCalls = 0
    let honored = 0
    const byKind = new Map<string, { n: number; credits: number }>()
    // Tallied over the batch and added once: an observe per entry cost ~1.2 µs (two per paid call).
    const lag = new Tally(FLUSH_BUCKETS)
    for (const e of entries) {
      lag.add(Math.max(0, now - Number(e.streamId.slice(0, e.streamId.indexOf('-')))) / 1000)
      const f = e.fields
      if (e.kind === 'call') {
        // record-calls.lua writes `organic` (and an organic call's `charged`) beside the record, so a
        // batch is not parsed record by record (issue 17); an entry written before that carries only `rec`.
        const organic = f.organic !== undefined ? { ok: f.organic === '1', charged: Number(f.charged ?? 0) } : organicOfRecord(f.rec)
        if (organic.ok) {
          organicCalls++
          honored += organic.charged
        }
        continue
      }
      if (!MONEY.has(e.kind)) continue
      const k = byKind.get(e.kind) ?? { n: 0, credits: 0 }
      k.n++
      k.credits += Math.abs(Number(f.amount))
      byKind.set(e.kind, k)
    }
    lag.foldInto(this.flushLag, {})
    if (organicCalls) this.organicCalls.inc(organicCalls)
    if (honored) this.creditsHonored.inc(honored)
    for (const [kind, k] of byKind) {
      this.ledgerEntries.inc({ kind }, k.n)
      this.ledgerCredits.inc({ kind }, k.credits)
      if (kind === 'debit') this.debits.inc(k.n)
      else if (kind === 'refund') this.refunds.inc(k.n)
    }
  }
}

const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10]
const FLUSH_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]

/** prom-client's own record of one histogram series (lib/histogram.js createBaseValues): what a fold adds to. */
interface HistogramValues {
  labels: Record<string, string | number>
  bucketValues: Record<number, number>
  sum: number
  count: number
}

/** Observations counted in plain numbers, added to a prom-client histogram in one step (foldInto). */
class Tally {
  count = 0
  private sum = 0
  /** Per bound (not cumulative); a value past the last bound is counted only in `count` (+Inf), as prom-client does. */
  private readonly buckets: Float64Array

  constructor(private readonly bounds: readonly number[]) {
    this.buckets = new Float64Array(bounds.length)
  }

  add(v: number): void {
    this.count++
    this.sum += v
    for (let i = 0; i < this.bounds.length; i++)
      if (v <= this.bounds[i]!) {
        this.buckets[i]!++
        break
      }
  }

  /**
   * Adds the tally to the histogram's series of `labels` (made by its public zero() when absent: a
   * new series, or after a reset), then starts again from zero. The histogram has these bounds.
   */
  foldInto<L extends string>(h: Histogram<L>, labels: Partial<Record<L, string>>): void {
    if (this.count === 0) return
    const wanted = Object.entries(labels)
    const find = () =>
      Object.values((h as unknown as { hashMap: Record<string, HistogramValues> }).hashMap).find((v) => wanted.every(([k, x]) => v.labels[k] === x))
    let v = find()
    if (!v) {
      h.zero(labels)
      v = find()!
    }
    for (let i = 0; i < this.bounds.length; i++) v.bucketValues[this.bounds[i]!]! += this.buckets[i]!
    v.sum += this.sum
    v.count += this.count
    this.count = 0
    this.sum = 0
    this.buckets.fill(0)
  }
}

/** One series' requests and durations since the last scrape. */
export class HttpSeries {
  private requests = 0
  private readonly duration = new Tally(HTTP_BUCKETS)
  private readonly counterLabels: { method: string; route: string; status: number }

  constructor(
    readonly method: string,
    readonly route: string,
    readonly status: number,
  ) {
    this.counterLabels = { method, route, status }
  }

  /** One request answered, `seconds` to its response head. */
  answered(seconds: number): void {
    this.requests++
    this.duration.add(seconds)
  }

  foldRequests(c: Counter<'method' | 'route' | 'status'>): void {
    if (this.requests === 0) return
    c.inc(this.counterLabels, this.requests)
    this.requests = 0
  }

  /** Into prom-client's series of this method and route, which every status of it shares. */
  foldDuration(h: Histogram<'method' | 'route'>): void {
    this.duration.foldInto(h, { method: this.method, route: this.route })
  }
}

function organicOfRecord(json: string | undefined): { ok: boolean; charged: number } {
  const rec = JSON.parse(json ?? '{}') as { refunded?: boolean; outcome?: string; charged?: number }
  return { ok: !rec.refunded && rec.outcome === 'ok', charged: rec.charged ?? 0 }
}
