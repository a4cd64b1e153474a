/**
 * Our service as the bench runs it: its own process (`bun run src/index.ts`), a fresh Postgres
 * database (or PGlite), a random Redis key prefix, a catalog whose one capability points at the
 * fake upstream, limits opened wide, and one funded account. Afterwards it checks that the ledger
 * is exact and removes everything it created.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import postgres from 'postgres'
import { createRedis, masters, type RedisClient } from '../../src/redis/client'
import { Keys } from '../../src/redis/keys'
import { deleteKeys } from '../../test/helpers/harness'
import { startChild, waitHttp, type Child } from './proc'

export const ROOT = join(import.meta.dir, '..', '..')
export const BENCH_SLUG = 'bench.search'
export const BENCH_PRICE = 5
/** Enough for any run on this machine: 10^12 credits ≫ price × (calls in a few minutes). */
const FUND = 1_000_000_000_000
const HUGE = '1000000000000000'
const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'

export function benchCatalog(upstreamUrl: string) {
  return {
    providers: {
      benchsearch: { base_url: upstreamUrl, key_env: 'BENCH_HOUSE_KEY', auth: { header: 'x-api-key' } },
    },
    capabilities: [
      {
        slug: BENCH_SLUG,
        provider: 'benchsearch',
        lane: 'house',
        price: BENCH_PRICE,
        method: 'POST',
        path: '/search',
        timeout_ms: 15000,
        description: 'bench: a search API on loopback',
        params: { type: 'object', required: ['q'], properties: { q: { type: 'string', minLength: 1 } } },
      },
    ],
  }
}

export interface BenchService {
  url: string
  child: Child
  prefix: string
  postgres: 'external' | 'pglite'
  /** The fresh database, with external Postgres. */
  dbUrl: string | undefined
  /** Its name (its backends' CPU is the service's own Postgres work). */
  dbName: string | undefined
  /** Whether the service runs its write-behind flusher (the production default). */
  flusher: boolean
  redis: RedisClient
  keys: Keys
  signup(): Promise<{ accountId: string; token: string }>
  /** The account's balance as the ledger holds it (the account hash in Redis). */
  balance(accountId: string): Promise<number>
  /**
   * Bench setup only: sets the balance field directly, bypassing the top-up path and its
   * balance cap, so that no run can drain the account. No ledger entry is written for it, which
   * is why the ledger check compares debits against the balance *after* this write.
   */
  fund(accountId: string): Promise<number>
  stop(): Promise<void>
  /** Processes of the service besides `child` (the flusher, when it runs as its own process). */
  extraPids(): number[]
}

export async function startService(o: {
  port: number
  upstreamUrl: string
  outDir: string
  pglite: boolean
  profile?: boolean
  flusher?: boolean
  /** Run the flusher as its own process (`bun run flusher`) beside an API with FLUSHER=0. */
  flusherProcess?: boolean
  /** Another entry point than src/index.ts, relative to the root (bench/ledger-work.ts). */
  entry?: string
  /** Another catalog (the proxy bench's); its house keys must use key_env BENCH_HOUSE_KEY. */
  catalog?: unknown
  /** Run on this Redis Cluster (`host:port,...`) instead of BENCH_REDIS_URL (the scale bench). */
  redisClusterNodes?: string
  /** Run on this Redis (a private redis-server: bench/redis-cpu.ts) instead of BENCH_REDIS_URL. */
  redisUrl?: string
  /**
   * The tree whose service runs (its own src/index.ts, lua/ and node_modules): a checkout of an
   * earlier commit for a baseline row. Default: this tree.
   */
  root?: string
  /** More environment for the entry point (bench/pipeline-floor.ts's upstream and model). */
  env?: Record<string, string>
}): Promise<BenchService> {
  const root = o.root ?? ROOT
  const redisUrl = o.redisUrl ?? REDIS_URL
  const prefix = `bench${Math.random().toString(36).slice(2, 10)}`
  const dbName = `bench_${Math.random().toString(36).slice(2, 10)}`
  let dbUrl: string | undefined
  if (!o.pglite) {
    const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} })
    await admin.unsafe(`CREATE DATABASE "${dbName}"`)
    await admin.end()
    const u = new URL(PG_ADMIN_URL)
    u.pathname = `/${dbName}`
    dbUrl = u.toString()
  }
  mkdirSync(o.outDir, { recursive: true })
  const catalogFile = join(o.outDir, 'catalog.json')
  writeFileSync(catalogFile, JSON.stringify(o.catalog ?? benchCatalog(o.upstreamUrl), null, 2))
  const env: Record<string, string | undefined> = {
    PORT: String(o.port),
    DATABASE_URL: dbUrl,
    PGLITE_DIR: o.pglite ? join(o.outDir, 'pg') : undefined,
    REDIS_URL: redisUrl,
    REDIS_KEY_PREFIX: prefix,
    LOG: 'silent',
    CATALOG_FILE: catalogFile,
    BENCH_HOUSE_KEY: 'bench-house-key',
    // Limits opened wide: the bench measures the cost of the checks, not their denials.
    RATE_LIMIT_PER_TOKEN: '1000000000',
    RATE_LIMIT_PER_IP: '1000000000',
    DEFAULT_DAILY_CAP: HUGE,
    DEFAULT_BALANCE_CAP: HUGE,
    // The runaway-agent breaker still counts every agent call, but the bench's identical requests
    // from one agent (the depth-4 row) must not trip it. A tree without the breaker ignores these.
    BREAKER_CREDITS_PER_MINUTE: HUGE,
    BREAKER_IDENTICAL_PER_MINUTE: HUGE,
    FLUSHER: o.flusher === false || o.flusherProcess ? '0' : '1',
    // Only the bench's catalog: the built-in demo provider (on by default on loopback) is not what is
    // measured. A tree from before it ignores the variable (config reads only the names it knows).
    DEMO_PROVIDER: 'off',
    ...o.env,
  }
  if (!dbUrl) delete env.DATABASE_URL
  if (o.redisClusterNodes) env.REDIS_CLUSTER_NODES = o.redisClusterNodes
  // BENCH_PROF_INTERVAL_US: a finer sampling interval than Bun's 1 ms, for a difference of a few µs a request.
  const interval = process.env.BENCH_PROF_INTERVAL_US ? [`--cpu-prof-interval=${process.env.BENCH_PROF_INTERVAL_US}`] : []
  const profile = o.profile ? ['--cpu-prof', '--cpu-prof-md', `--cpu-prof-dir=${o.outDir}`, ...interval] : []
  const bun = join(root, 'node_modules', '.bin', 'bun')
  const child = startChild('service', [bun, ...profile, 'run', o.entry ?? 'src/index.ts'], env, join(o.outDir, 'service.log'), { cwd: root })
  const url = `http://127.0.0.1:${o.port}`
  await waitHttp(`${url}/status`, child)
  const flusherChild =
    o.flusherProcess && o.flusher !== false
      ? startChild('flusher', [bun, 'run', 'src/flusher-main.ts'], env, join(o.outDir, 'flusher.log'), { cwd: root })
      : null
  const redis = createRedis({ REDIS_URL: redisUrl, REDIS_CLUSTER_NODES: o.redisClusterNodes })
  await redis.ping() // a cluster client learns its masters on connect
  const keys = new Keys(prefix)

  return {
    url,
    child,
    prefix,
    postgres: dbUrl ? 'external' : 'pglite',
    dbUrl,
    dbName: dbUrl ? dbName : undefined,
    flusher: o.flusher !== false,
    redis,
    keys,
    async signup() {
      const res = await fetch(`${url}/v1/signup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: `bench-${prefix}@example.com`, origin: 'bench' }),
      })
      const body = (await res.json()) as { account_id: string; token: string }
      if (res.status !== 201) throw new Error(`signup answered ${res.status}: ${JSON.stringify(body)}`)
      return { accountId: body.account_id, token: body.token }
    },
    async balance(accountId) {
      return Number(await redis.hget(keys.account(accountId), 'balance'))
    },
    async fund(accountId) {
      await redis.hset(keys.account(accountId), 'balance', FUND)
      return FUND
    },
    extraPids: () => (flusherChild ? [flusherChild.proc.pid] : []),
    async stop() {
      await child.stop()
      await flusherChild?.stop()
      for (const node of masters(redis)) await deleteKeys(node, prefix)
      redis.disconnect()
      if (dbUrl) {
        const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} })
        await admin.unsafe(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`)
        await admin.end()
      }
    },
  }
}
