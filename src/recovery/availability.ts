/**
 * Never serve an empty ledger as if it were true. Redis can come back empty while Postgres still
 * holds the accounts (an unpersisted Redis restarted, a failover to a fresh replica, a lost
 * volume); every token would then answer UNAUTHORIZED and every balance 0.
 *
 * Each shard carries a mark (`keys.ledgerMark`), written when the ledger is first initialised (no
 * account in Postgres yet) and by every rebuild. The marks are checked when the services are built,
 * whenever the Redis connection becomes ready again, every LEDGER_CHECK_MS, and whenever Redis
 * says "no such token / account" (so the first request after a loss already sees it). While a mark
 * is missing the ledger is closed: the admitting money scripts refuse before they run, unknown
 * tokens are not called unknown, and /status is degraded. The instance holding `keys.rebuildLock`
 * restores every account Redis lacks from Postgres plus the outbox (ledger/rebuild.ts) and writes
 * the marks; the others wait for the marks. A rebuild that fails (Postgres down, an account that
 * cannot be planned) leaves the ledger closed and is retried every LEDGER_CHECK_MS.
 *
 * errors: LEDGER_UNAVAILABLE (503). health: redis_empty, ledger_rebuilding, ledger_rebuild_failed.
 * Logs: ledger_rebuilt, ledger_rebuild_failed, ledger_check_failed.
 */
import type { Database } from '../db/client'
import { accounts } from '../db/schema'
import { ApiError } from '../errors'
import type { Health } from '../health'
import type { Log } from '../log'
import { randomId } from '../auth/tokens'
import { ScriptStatus as S } from '../redis/codes'
import { SHARDS } from '../redis/keys'
import type { ScriptName, Scripts } from '../redis/scripts'
import type { RedisContext } from '../redis/context'
import { restoreMissing } from './rebuild'
import { statusOf } from '../lua/reply'

/**
 * Scripts that run while the ledger is closed: settling what was admitted before (a refund, a call
 * record, a refill release find nothing to move in an empty Redis), the rebuild's own write, the
 * flusher's, and those that touch no account.
 */
const UNGATED: ReadonlySet<string> = new Set<ScriptName | 'deadLetter' | 'replayDeadLetter'>([
  'refund',
  'recordCalls',
  'releaseRefill',
  'restoreAccount',
  'recountAgents',
  'rateLimit',
  'claimLink',
  'releaseLink',
  'deadLetter',
  'replayDeadLetter',
])

/**
 * Scripts whose success would be wrong on an emptied Redis that no check has caught yet, so they
 * re-read the marks first: a signup would claim an e-mail that Postgres already holds. Signups are
 * few (rate-limited per IP), so the extra round trip is affordable there and nowhere else.
 */
const CONFIRM_FIRST: ReadonlySet<string> = new Set<ScriptName>(['signupGate'])

/** The rebuild lock lives this long without a renewal (a rebuilder that died frees it). */
const LOCK_MS = 30_000
/** While closed, requests re-check the marks at most this often (they arrive by the thousand). */
const CLOSED_RECHECK_MS = 200
const RETRY_AFTER_S = 5

export interface AvailabilityDeps {
  ctx: RedisContext
  db: Database
  health: Health
  log: Log
  checkMs: number
}

export class LedgerAvailability {
  private open = false
  private checking: Promise<void> | null = null
  private checkedAt = 0
  private rebuilding: Promise<void> | null = null
  private auto = false
  private timer: ReturnType<typeof setInterval> | null = null
  private readonly onReady = () => void this.check().catch((e) => this.warn(e))

  constructor(private d: AvailabilityDeps) {}

  get isOpen(): boolean {
    return this.open
  }

  /** Checks on its own from now on (timer, reconnects) and rebuilds when the marks are missing. */
  start(): void {
    this.auto = true
    this.timer = setInterval(this.onReady, this.d.checkMs)
    this.d.ctx.redis.on('ready', this.onReady)
    this.onReady()
  }

  async stop(): Promise<void> {
    this.auto = false
    if (this.timer) clearInterval(this.timer)
    this.d.ctx.redis.off('ready', this.onReady)
    await this.rebuilding
  }

  /** Reads the marks (one check at a time); opens, or closes and (when started) rebuilds. */
  check(): Promise<void> {
    this.checking ??= this.checkNow().finally(() => {
      this.checking = null
      this.checkedAt = Date.now()
    })
    return this.checking
  }

  /** Throws LEDGER_UNAVAILABLE unless the marks are there (re-read while closed). */
  async assertOpen(): Promise<void> {
    if (!this.open && Date.now() - this.checkedAt >= CLOSED_RECHECK_MS) await this.check().catch((e) => this.warn(e))
    if (!this.open) throw unavailable(this.d.ctx.cfg.BASE_URL)
  }

  /**
   * Redis said a token or an account does not exist: believe it only while the marks are there
   * (one round of EXISTS, paid only on refusals).
   */
  async confirmAbsent(): Promise<void> {
    if (this.open) await this.check().catch((e) => this.warn(e))
    await this.assertOpen()
  }

  /** The scripts, with every one that admits or moves money refusing while the ledger is closed. */
  gate(scripts: Scripts): Scripts {
    const out = { ...scripts }
    for (const name of Object.keys(scripts) as ScriptName[]) {
      if (UNGATED.has(name)) continue
      const run = scripts[name]
      const first = CONFIRM_FIRST.has(name)
      type Reply = Awaited<ReturnType<typeof run>>
      // A refusal that says "absent" is believed only once the marks are confirmed.
      const checked = (reply: Reply): Reply | Promise<Reply> => {
        const status = statusOf(reply)
        return status === S.UNAUTHORIZED || status === S.NOT_FOUND ? this.confirmAbsent().then(() => reply) : reply
      }
      out[name] = (keys, argv) => {
        // The open ledger's common call goes straight to its script: no async frame of its own.
        if (first || !this.open) return (first ? this.confirmAbsent() : this.assertOpen()).then(() => run(keys, argv)).then(checked)
        try {
          return run(keys, argv).then(checked)
        } catch (e) {
          // A script that throws before it sends rejects, as the async wrapper did.
          return Promise.reject(e)
        }
      }
    }
    return out
  }

  private async checkNow(): Promise<void> {
    if (await marksPresent(this.d.ctx)) return this.setOpen()
    this.close()
    // A fresh ledger (nothing in Postgres to restore from) is whole as it is.
    const [any] = await this.d.db.select({ id: accounts.id }).from(accounts).limit(1)
    if (!any) {
      await writeMarks(this.d.ctx)
      return this.setOpen()
    }
    if (this.auto && !this.rebuilding)
      this.rebuilding = this.rebuild().finally(() => {
        this.rebuilding = null
      })
  }

  private setOpen(): void {
    this.open = true
    for (const r of ['redis_empty', 'ledger_rebuilding', 'ledger_rebuild_failed']) this.d.health.set(r, null)
  }

  private close(): void {
    this.open = false
    this.d.health.set('redis_empty', 'Redis lacks the ledger marks while Postgres holds accounts (Redis came back empty); money paths answer LEDGER_UNAVAILABLE until the rebuild writes them')
  }

  private async rebuild(): Promise<void> {
    const { ctx, health, log } = this.d
    const lock = ctx.keys.rebuildLock()
    const me = randomId(8)
    if ((await ctx.redis.set(lock, me, 'PX', LOCK_MS, 'NX')) !== 'OK') {
      health.set('ledger_rebuilding', 'another instance is restoring the ledger from Postgres and the outbox')
      return
    }
    const renew = setInterval(() => void ctx.redis.pexpire(lock, LOCK_MS).catch(() => {}), LOCK_MS / 3)
    health.set('ledger_rebuilding', 'this instance is restoring the ledger from Postgres and the outbox')
    const started = Date.now()
    try {
      // Another instance may have finished between our check and the lock.
      if (await marksPresent(ctx)) return this.setOpen()
      const r = await restoreMissing(ctx, this.d.db)
      if (r.failed.length > 0) {
        const first = r.failed[0]!
        // /status is public: the count only; the account and the error are for the log.
        health.set('ledger_rebuild_failed', `${r.failed.length} account(s) could not be restored (log: ledger_rebuild_failed); retried every ${this.d.checkMs} ms, or run bun run ledger:rebuild -- --all`)
        log.error('ledger_rebuild_failed', { restored: r.restored, present: r.present, failed: r.failed.length, first_account: first.account, first_error: first.error })
        return
      }
      await writeMarks(ctx)
      log.warn('ledger_rebuilt', { restored: r.restored, present: r.present, ms: Date.now() - started })
      this.setOpen()
    } catch (e) {
      health.set('ledger_rebuild_failed', `the rebuild failed (log: ledger_rebuild_failed); retried every ${this.d.checkMs} ms`)
      log.error('ledger_rebuild_failed', { error: e instanceof Error ? e.message : String(e) })
    } finally {
      clearInterval(renew)
      health.set('ledger_rebuilding', null)
      // Not atomic, and need not be: a lock taken over meanwhile finds the marks and does nothing.
      if ((await ctx.redis.get(lock).catch(() => null)) === me) await ctx.redis.del(lock).catch(() => {})
    }
  }

  private warn(e: unknown): void {
    this.d.log.warn('ledger_check_failed', { error: e instanceof Error ? e.message : String(e) })
  }
}

function unavailable(baseUrl: string): ApiError {
  return new ApiError('LEDGER_UNAVAILABLE', { retry_after_s: RETRY_AFTER_S, status_url: `${baseUrl}/status` }, { 'retry-after': String(RETRY_AFTER_S) })
}

export async function marksPresent(ctx: RedisContext): Promise<boolean> {
  const found = await Promise.all(Array.from({ length: SHARDS }, (_, s) => ctx.redis.exists(ctx.keys.ledgerMark(s))))
  return found.every((n) => n === 1)
}

/** Declares every shard whole (after a rebuild, or on a fresh ledger). */
export async function writeMarks(ctx: RedisContext): Promise<void> {
  await Promise.all(Array.from({ length: SHARDS }, (_, s) => ctx.redis.set(ctx.keys.ledgerMark(s), String(ctx.clock.now()))))
}
