/**
 * Wires the process: config → Redis (scripts loaded) → Postgres (migrated) → catalog → guards →
 * flusher. Tests build the same graph with their own key prefix, database and clock.
 */
import { systemClock, type Clock } from './clock'
import type { Config } from './config'
import { connectPostgres, openDatabase, type DbHandle } from './db/client'
import { TokenResolver } from './auth/principal'
import { Guard } from './auth/guard'
import type { RedisContext } from './redis/context'
import { Flusher } from './write-behind/flusher'
import { registerSinks } from './write-behind/sink-registry'
import { SINKS } from './sinks'
import { InFlightLeases } from './paid-request/leases'
import { AbandonedCallSweeper } from './paid-request/sweeper'
import { Catalog } from './catalog/catalog'
import { demoCatalog, demoEnabled } from './catalog/demo'
import { createRedis } from './redis/client'
import { Keys } from './redis/keys'
import { loadScripts } from './redis/scripts'
import { PauseWatcher } from './catalog/pauses'
import { Log } from './log'
import { Metrics } from './metrics'
import { SpendAlarm } from './alarms/spend'
import { KeyVault } from './vault/store'
import type { KeyLookup } from './vault/key-lookup'
import { Mailer } from './mail/mailer'
import { createGateway } from './payments'
import type { PaymentGateway } from './payments/gateway'
import { Refiller } from './mandate/refill'
import { DeliveryWorker } from './events/deliveries'
import { notifyCapabilityPaused } from './events/capability-paused'
import { BotApi } from './telegram/botapi'
import { Health } from './health'
import { NotConfiguredAlarm } from './alarms/not-configured'
import { ledgerHealthProbe } from './write-behind/health'
import { LedgerAvailability } from './recovery/availability'
import { loadEndUserSecret } from './metering/end-user-secret'
import { BillCheck } from './provider-bill/check'
import { DriftAlarm } from './provider-bill/alarm'


export interface Services {
  cfg: Config
  ctx: RedisContext
  db: DbHandle
  catalog: Catalog
  guard: Guard
  flusher: Flusher
  /** Refunds calls cut off by a crash (debited, never answered). */
  sweeper: AbandonedCallSweeper
  /** Renews the in-flight deadline of long proxied streams, so the sweeper leaves them be. */
  leases: InFlightLeases
  pauses: PauseWatcher
  log: Log
  /** Reasons /status reports as `degraded` (held by parts of the process, or probed). */
  health: Health
  /** Whether Redis holds the whole ledger; refuses money paths and rebuilds when it came back empty. */
  ledger: LedgerAvailability
  /** Prometheus counters (GET /metrics); the proxy adds its bytes to `metrics.proxyBytes`. */
  metrics: Metrics
  /** Raised by every NOT_CONFIGURED answer: the operator signal that answer promises. */
  notConfigured: NotConfiguredAlarm
  vaultedKey: KeyLookup
  /** The key of the house lane's end-user ids (END_USER_ID_SECRET, else generated once: metering/end-user-secret.ts). */
  endUserSecret: string
  /** The card processor (PAYMENTS: sandbox or stripe). */
  payments: PaymentGateway
  mailer: Mailer
  /** Auto-refill and explicit top-ups under the mandate. */
  refiller: Refiller
  /** Sends owner events to webhooks and linked chats (started by index.ts; tests call runOnce). */
  deliveries: DeliveryWorker
  /** The operator channel's Telegram bot; null without TELEGRAM_BOT_TOKEN. */
  bot: BotApi | null
  /** The daily reconciliation with the providers' bills (docs/api.md §13d; started by index.ts). */
  billCheck: BillCheck
  /** Its drift alarm: /admin/alarms, /status, pab_reconcile_drift. */
  driftAlarm: DriftAlarm
  startedAt: number
  close(): Promise<void>
}

export interface BuildOptions {
  clock?: Clock
  env?: Record<string, string | undefined>
  /** A separate database for the flusher (tests point it at a dead server). */
  flusherDatabaseUrl?: string
}

export async function buildServices(cfg: Config, opt: BuildOptions = {}): Promise<Services> {
  registerSinks(SINKS)
  const log = new Log(cfg.LOG)
  const catalog = Catalog.load(cfg.CATALOG_FILE, opt.env ?? process.env, demoEnabled(cfg) ? demoCatalog(cfg.BASE_URL) : undefined)
  const redis = createRedis(cfg)
  const keys = new Keys(cfg.REDIS_KEY_PREFIX)
  const scripts = loadScripts(redis)
  const ctx: RedisContext = { redis, keys, scripts, clock: opt.clock ?? systemClock, cfg }
  const db = await openDatabase(cfg)
  // An unpriced path opened on the house key is served to every signup for nothing but the request cap.
  for (const w of catalog.unpricedHouseOpenings()) log.warn('house_path_unpriced', w)
  const endUserSecret = await loadEndUserSecret(ctx)
  const health = new Health()
  const ledger = new LedgerAvailability({ ctx, db: db.db, health, log, checkMs: cfg.LEDGER_CHECK_MS })
  ctx.scripts = ledger.gate(scripts)
  // Closed until the marks are read: an empty Redis is never served, even before the first check.
  await ledger.check().catch((e) => log.warn('ledger_check_failed', { error: e instanceof Error ? e.message : String(e) }))
  const flusherDb = opt.flusherDatabaseUrl ? connectPostgres(opt.flusherDatabaseUrl, 2) : db
  const flusher = new Flusher(ctx, flusherDb.db, {
    batch: cfg.FLUSH_BATCH,
    intervalMs: cfg.FLUSH_INTERVAL_MS,
    staleMs: cfg.FLUSH_STALE_MS,
    onError: (e) => log.warn('flush_failed', { error: e instanceof Error ? e.message : String(e) }),
    onDeadLetter: (d) => log.error('outbox_dead_letter', { shard: d.shard, stream_id: d.streamId, kind: d.kind, error: d.error }),
  })
  health.probe(ledgerHealthProbe(flusher, cfg))
  const pauses = new PauseWatcher(ctx, catalog)
  const spendAlarm = new SpendAlarm(
    ctx,
    { alarmOf: (slug) => catalog.capabilities.get(slug)?.spend_alarm, pause: (slug) => pauses.pause(slug, 'spend_alarm') },
    (slug, spend, alarm) => log.warn('spend_alarm_tripped', { slug, spend, alarm }),
  )
  flusher.observe((entries) => spendAlarm.observe(entries))
  const metrics = new Metrics()
  metrics.watchFlusher(flusher)
  const notConfigured = new NotConfiguredAlarm({ log, health, count: (feature) => metrics.notConfigured.inc({ feature }), now: () => ctx.clock.now() })
  const vault = new KeyVault(db.db, cfg.VAULT_MASTER_KEY, ctx.clock, cfg.VAULT_PREVIOUS_MASTER_KEY)
  const mailer = new Mailer({ smtpUrl: cfg.SMTP_URL, dir: cfg.MAIL_DIR, from: `no-reply@${new URL(cfg.BASE_URL).hostname}`, log })
  const payments = createGateway(cfg)
  const refiller = new Refiller({ ctx, cfg, payments, mailer, log })
  ctx.onRefillDue = (accountId) => refiller.trigger(accountId)
  const bot = cfg.TELEGRAM_BOT_TOKEN ? new BotApi(cfg.TELEGRAM_API_BASE, cfg.TELEGRAM_BOT_TOKEN) : null
  const deliveries = new DeliveryWorker({ db: db.db, clock: ctx.clock, log, pollMs: cfg.EVENT_POLL_MS, bot, allowInsecureLoopback: cfg.WEBHOOKS_ALLOW_INSECURE_LOOPBACK === '1' })
  // New events were just committed: the worker need not wait for its next poll.
  flusher.observe(async (entries) => {
    if (entries.some((e) => e.kind === 'event')) deliveries.poke()
  })
  pauses.onPaused = async (slug, reason) => {
    await notifyCapabilityPaused(db.db, ctx.clock, slug, reason).catch((e) => log.error('capability_paused_event_failed', { slug, error: String(e) }))
    deliveries.poke()
  }
  await pauses.refresh()
  let driftAlarm: DriftAlarm | undefined
  const billCheck = new BillCheck({
    db: db.db,
    ctx,
    catalog,
    env: opt.env ?? process.env,
    thresholdPct: cfg.RECONCILE_DRIFT_PCT,
    checkMs: cfg.RECONCILE_CHECK_MS,
    log,
    onRun: (provider, status) => metrics.reconcileRuns.inc({ provider, status }),
    onStored: () => driftAlarm?.invalidate(),
  })
  driftAlarm = new DriftAlarm({
    db: db.db,
    providers: () => billCheck.providers.map((p) => p.id),
    dueDay: () => billCheck.dueDay(),
    thresholdPct: cfg.RECONCILE_DRIFT_PCT,
    now: () => Date.now(),
  })
  health.probe(() => driftAlarm.reasons())
  metrics.watchBillDrift(billCheck.providers.map((p) => p.id), () => driftAlarm.list())
  const sweeper = new AbandonedCallSweeper(ctx, (e) => log.warn('sweep_failed', { error: e instanceof Error ? e.message : String(e) }))
  const leases = new InFlightLeases(ctx, {}, (e) => log.warn('lease_renewal_failed', { error: e instanceof Error ? e.message : String(e) }))
  return {
    cfg,
    ctx,
    db,
    catalog,
    guard: new Guard(ctx, new TokenResolver(ctx, () => ledger.confirmAbsent())),
    flusher,
    sweeper,
    leases,
    pauses,
    log,
    health,
    ledger,
    metrics,
    notConfigured,
    vaultedKey: (accountId, provider) => vault.lookup(accountId, provider),
    endUserSecret,
    payments,
    mailer,
    refiller,
    deliveries,
    bot,
    billCheck,
    driftAlarm,
    startedAt: Date.now(),
    async close() {
      await billCheck.stop()
      await ledger.stop()
      pauses.stop()
      sweeper.stop()
      leases.stop()
      await refiller.stop()
      await deliveries.stop()
      await mailer.idle()
      await flusher.stop()
      if (flusherDb !== db) await flusherDb.close()
      await db.close()
      redis.disconnect()
    },
  }
}
