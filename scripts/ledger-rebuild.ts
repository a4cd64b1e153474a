/**
 * ledger:rebuild — writes accounts back into Redis from the durable ledger (Postgres plus the
 * outbox entries Redis still holds), for the day Redis loses data. Configured by the service's own
 * env (REDIS_URL or REDIS_CLUSTER_NODES, REDIS_KEY_PREFIX, DATABASE_URL). See docs/operations.md.
 *
 *   bun run ledger:rebuild -- --all                 restore every account Redis lacks; report drift
 *   bun run ledger:rebuild -- --account acc_07_...  one account (repeatable)
 *   options: --dry-run (print the plan, write nothing)
 *            --force   (also overwrite accounts that still exist; stop the service first)
 *
 * Prints one JSON line per account and a summary; exits 1 when an existing account's balance
 * differs from its ledger (and --force was not given), 2 on bad arguments. An `--all` run in which
 * no account failed writes the ledger marks, which reopens the money paths of running instances
 * that found Redis empty (src/ledger/availability.ts).
 */
import { parseArgs } from 'node:util'
import { systemClock } from '../src/clock'
import { loadConfigOrExit } from '../src/config'
import { openDatabase } from '../src/db/client'
import type { RedisContext } from '../src/redis/context'
import { writeMarks } from '../src/recovery/availability'
import { allAccountIds, applyRebuild, planRebuild, RebuildError } from '../src/recovery/rebuild'
import { advanceOutboxes } from '../src/write-behind/outbox-floor'
import { createRedis } from '../src/redis/client'
import { Keys } from '../src/redis/keys'
import { loadScripts } from '../src/redis/scripts'

const { values: opt } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    account: { type: 'string', multiple: true, default: [] },
    all: { type: 'boolean', default: false },
    'dry-run': { type: 'boolean', default: false },
    force: { type: 'boolean', default: false },
  },
})
if (!opt.all && opt.account!.length === 0) {
  console.error('usage: bun run ledger:rebuild -- (--all | --account <id> ...) [--dry-run] [--force]')
  process.exit(2)
}

const cfg = loadConfigOrExit()
const redis = createRedis(cfg)
const ctx: RedisContext = { redis, keys: new Keys(cfg.REDIS_KEY_PREFIX), scripts: loadScripts(redis), clock: systemClock, cfg }
const db = await openDatabase(cfg)

const summary = { accounts: 0, restored: 0, unchanged: 0, drift: 0, failed: 0 }
try {
  // Before anything of the rebuild is written: new entries sort after every flushed one (outbox-floor.ts).
  if (!opt['dry-run']) await advanceOutboxes(ctx, db.db)
  const ids = opt.all ? await allAccountIds(ctx, db.db) : opt.account!
  for (const id of ids) {
    summary.accounts++
    try {
      const plan = await planRebuild(ctx, db.db, id)
      if (opt['dry-run']) {
        // The ledger sums to the posted balance: what Redis can spend plus what its calls in flight hold.
        const [balance, held] = await redis.hmget(ctx.keys.account(id), 'balance', 'held')
        const inRedis = balance === null ? null : Number(balance) + Number(held ?? 0)
        console.log(JSON.stringify({ account: id, action: 'plan', balance: plan.balance, in_redis: inRedis, held: Number(held ?? 0), spent_today: plan.spentToday, agents: plan.agents.length, ledger: plan.ledger }))
        continue
      }
      const r = await applyRebuild(ctx, plan, { force: opt.force })
      if (r.restored) summary.restored++
      else if (r.balance === r.expected) summary.unchanged++
      else summary.drift++
      const action = r.restored ? 'restored' : r.balance === r.expected ? 'unchanged' : 'drift'
      console.log(JSON.stringify({ account: id, action, balance: r.balance, ledger_balance: r.expected, ledger: plan.ledger }))
    } catch (e) {
      summary.failed++
      console.log(JSON.stringify({ account: id, action: 'failed', error: e instanceof RebuildError ? e.message : String(e) }))
    }
  }
  if (opt.all && !opt['dry-run'] && summary.failed === 0) await writeMarks(ctx)
  console.error(JSON.stringify({ summary, dry_run: opt['dry-run'], force: opt.force }))
} finally {
  redis.disconnect()
  await db.close()
}
process.exit(summary.drift > 0 || summary.failed > 0 ? 1 : 0)
