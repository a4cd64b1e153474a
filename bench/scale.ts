/**
 * The scale bench (issue 7): the paid call and the proxy under load from 1 to 400 connections,
 * against one instance on the single Redis and against a 3-master Redis Cluster, next to the
 * upstream called directly, plus redis-benchmark EVALSHA figures of the debit script measured in
 * the same run. Checks the ledger of each service afterwards and writes the "Scale (issue 7)"
 * section of bench/RESULTS.md.
 *
 *   bun run bench:scale [--levels 1,16,64,256,400] [--duration 3] [--warmup 1] [--no-write]
 *
 * Needs Redis at BENCH_REDIS_URL (default redis://127.0.0.1:6379), Postgres at BENCH_PG_URL
 * (default postgres://postgres@127.0.0.1:5432/postgres; a fresh database per service, dropped
 * afterwards), and redis-server, redis-cli and redis-benchmark on the PATH (the cluster is started
 * and removed by the bench itself).
 */
import { readFileSync } from 'node:fs'
import { availableParallelism, release } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { startRedisCluster, type RedisCluster } from '../test/cluster/cluster'
import { startRedisServer } from '../test/helpers/redis-server'
import { evalshaCeiling } from './lib/evalsha'
import { checkScaleLedger, type ScaleLedger } from './lib/scale-ledger'
import { runLoad, type LoadOptions } from './lib/load'
import { freePort, loadAverage, measureCpu, startChild, waitHttp, type Child } from './lib/proc'
import { render, writeSection, type ScaleRow } from './lib/scale-report'
import { BENCH_PRICE, BENCH_SLUG, ROOT, benchCatalog, startService, type BenchService } from './lib/service'

const { values: opt } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    levels: { type: 'string', default: '1,16,64,256,400' },
    duration: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '1' },
    'no-write': { type: 'boolean', default: false },
  },
})
const LEVELS = opt.levels!.split(',').map(Number)
const DURATION = Number(opt.duration)
const WARMUP = Number(opt.warmup)
const BUN = join(ROOT, 'node_modules', '.bin', 'bun')
const OUT = join(ROOT, 'bench', '.out', `scale-${Date.now()}`)
const BODY = JSON.stringify({ q: 'bench query' })
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const EVALSHA_RUNS = [
  { clients: 50, pipeline: 1, requests: 100_000 },
  { clients: 50, pipeline: 16, requests: 200_000 },
]
const PERSISTENCE_RUNS = [
  { clients: 50, pipeline: 1, requests: 50_000 },
  { clients: 50, pipeline: 16, requests: 100_000 },
]

/** The bench catalog, with the same provider also open as a proxy route at the paid call's price. */
function catalog(upstreamUrl: string) {
  const c = benchCatalog(upstreamUrl)
  return { ...c, providers: { benchsearch: { ...c.providers.benchsearch, proxy: { price: BENCH_PRICE, paths: ['/'], house: { allow: ['/'] } } } } }
}

const children: Child[] = []
const services: BenchService[] = []
let cluster: RedisCluster | null = null
async function stopServices() {
  for (const s of services.splice(0)) await s.stop().catch((e) => console.error('cleanup:', e))
}
async function cleanup() {
  await stopServices()
  for (const c of children.splice(0).reverse()) await c.stop().catch(() => {})
  await cluster?.stop().catch(() => {})
  cluster = null
}
process.on('SIGINT', async () => {
  await cleanup()
  process.exit(130)
})

/** A warm-up run (discarded, but its 2xx count for the ledger check), then the measured run. */
async function measure(route: string, backend: string, connections: number, load: LoadOptions): Promise<{ row: ScaleRow; warmOk: number }> {
  const warm = await runLoad({ ...load, durationS: WARMUP })
  const m = await measureCpu({}, () => runLoad(load))
  const row = { connections, route, backend, load: m.value, machineBusyPct: m.machineBusyPct }
  console.error(`  c=${connections} ${route} (${backend}): ${Math.round(m.value.reqPerSec)} req/s, p50 ${m.value.p50} ms, p99 ${m.value.p99} ms, p99.9 ${m.value.p999} ms`)
  return { row, warmOk: warm.ok }
}

/** One service on one Redis: every level for the paid call and the proxy, then its ledger check. */
async function benchBackend(backend: string, upstreamUrl: string, clusterNodes?: string): Promise<{ rows: ScaleRow[]; check: ScaleLedger }> {
  console.error(`starting the service on the ${backend}...`)
  const svc = await startService({ port: freePort(), upstreamUrl, outDir: join(OUT, backend.replace(/\W+/g, '-')), pglite: false, catalog: catalog(upstreamUrl), redisClusterNodes: clusterNodes })
  services.push(svc)
  const { accountId, token } = await svc.signup()
  const funded = await svc.fund(accountId)
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` }
  const paidUrl = `${svc.url}/v1/call/${BENCH_SLUG}`
  const proxyUrl = `${svc.url}/proxy/benchsearch/search`
  for (const url of [paidUrl, proxyUrl]) {
    const res = await fetch(url, { method: 'POST', headers, body: BODY })
    if (res.status !== 200) throw new Error(`${url} answered ${res.status}: ${await res.text()}`)
    await res.arrayBuffer()
  }
  const rows: ScaleRow[] = []
  let clientOk = 2 // the two sanity requests
  for (const c of LEVELS)
    for (const [route, url] of [
      ['paid call', paidUrl],
      ['proxy', proxyUrl],
    ] as const) {
      const { row, warmOk } = await measure(route, backend, c, { url, connections: c, durationS: DURATION, body: BODY, headers })
      rows.push(row)
      clientOk += row.load.ok + warmOk
    }
  console.error(`checking the ledger of the ${backend} service...`)
  // Each run (warm-up and measured, two routes) may drop up to its connection count in flight.
  const check = await checkScaleLedger(svc, { accountId, funded, price: BENCH_PRICE, clientOk, maxInFlightDropped: 4 * LEVELS.reduce((a, c) => a + c, 0) })
  return { rows, check }
}

try {
  const loadBefore = loadAverage()
  const upPort = freePort()
  await Bun.write(join(OUT, '.keep'), '')
  const upstream = startChild('fake-upstream', [BUN, 'bench/fake-upstream.ts'], { PORT: String(upPort) }, join(OUT, 'upstream.log'))
  children.push(upstream)
  const upstreamUrl = `http://127.0.0.1:${upPort}`
  await waitHttp(upstreamUrl, upstream)

  const rows: ScaleRow[] = []
  console.error('upstream direct (the baseline)...')
  for (const c of LEVELS) rows.push((await measure('upstream direct', '–', c, { url: `${upstreamUrl}/search`, connections: c, durationS: DURATION, body: BODY, headers: { 'content-type': 'application/json' } })).row)

  const ledgers: { backend: string; check: ScaleLedger }[] = []
  const single = await benchBackend('single Redis', upstreamUrl)
  rows.push(...single.rows)
  ledgers.push({ backend: 'single Redis', check: single.check })
  await stopServices()

  console.error('starting a 3-master Redis Cluster...')
  cluster = await startRedisCluster(3)
  const clustered = await benchBackend('3-master cluster', upstreamUrl, cluster.nodes)
  rows.push(...clustered.rows)
  ledgers.push({ backend: '3-master cluster', check: clustered.check })
  await cleanup()

  console.error('redis-benchmark EVALSHA of the debit script...')
  const evalsha = await evalshaCeiling(REDIS_URL, BENCH_PRICE, EVALSHA_RUNS)
  for (const e of evalsha.results) console.error(`  -c ${e.clients} -P ${e.pipeline}: ${Math.round(e.reqPerSec)} req/s, p50 ${e.p50} ms, p99 ${e.p99} ms, p99.9 ${e.p999} ms`)
  // What each persistence setting of docs/operations.md costs the debit script: a private
  // redis-server per setting, files on this machine's disk.
  const persistence = []
  for (const appendfsync of [undefined, 'everysec', 'always'] as const) {
    const server = await startRedisServer({ appendfsync })
    try {
      const r = await evalshaCeiling(server.url, BENCH_PRICE, PERSISTENCE_RUNS)
      persistence.push({ setting: appendfsync ? `appendonly yes, appendfsync ${appendfsync}` : 'no persistence', results: r.results })
      for (const e of r.results) console.error(`  ${persistence.at(-1)!.setting}, -P ${e.pipeline}: ${Math.round(e.reqPerSec)} req/s, p99 ${e.p99} ms`)
    } finally {
      await server.stop()
    }
  }

  const section = render({
    command: ['bun run bench:scale', ...Bun.argv.slice(2)].join(' '),
    at: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    machine: await describeMachine(),
    loadBefore,
    loadAfter: loadAverage(),
    durationS: DURATION,
    warmupS: WARMUP,
    rows,
    evalsha,
    persistence,
    ledgers,
  })
  console.log(section)
  if (!opt['no-write']) {
    writeSection(join(ROOT, 'bench', 'RESULTS.md'), section)
    console.error('wrote the "Scale (issue 7)" section of bench/RESULTS.md')
  }
  process.exit(ledgers.every((l) => l.check.exact) ? 0 : 1)
} catch (e) {
  console.error(e)
  console.error(`logs: ${OUT}`)
  await cleanup()
  process.exit(1)
}

async function describeMachine(): Promise<string[]> {
  const cpuModel = /model name\s*:\s*(.+)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? 'unknown CPU'
  const version = async (cmd: string[]) => (await new Response(Bun.spawn(cmd, { stdout: 'pipe' }).stdout).text()).trim()
  const autocannon = JSON.parse(readFileSync(join(ROOT, 'node_modules', 'autocannon', 'package.json'), 'utf8')).version
  return [
    `nproc ${availableParallelism()} (${cpuModel}), Linux ${release()}`,
    `Bun ${await version([BUN, '--version'])} (servers), autocannon ${autocannon} (client, its own process), ${await version(['redis-server', '--version'])}`,
    'Everything on loopback on this one machine, shared with the other engineers\' work; service with LOG=silent, its flusher on, rate limits and caps opened wide, a fresh Postgres database per service',
  ]
}
