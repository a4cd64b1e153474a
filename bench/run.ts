/**
 * The paid-call bench (issue 2): throughput and p50/p99 of POST /v1/call/{slug} next to two
 * baselines measured in the same run — the fake upstream called directly, and a bare Bun `fetch`
 * passthrough to it with no ledger. Prints the results and writes them into its own section of
 * bench/RESULTS.md, then checks that the ledger is exact after the load.
 *
 *   ./node_modules/.bin/bun run bench [--connections 64] [--duration 10] [--warmup 2] [--rounds 1] [--pglite] [--no-write] [--profile] [--no-flusher] [--rows paid]
 *
 * Needs Redis at BENCH_REDIS_URL (default redis://127.0.0.1:6379) and, unless --pglite, Postgres at
 * BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres), where it creates and later
 * drops a fresh database.
 */
import { readFileSync } from 'node:fs'
import { availableParallelism, release } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import postgres from 'postgres'
import { checkLedger } from './lib/ledger-check'
import { clientRuntime, runLoad, type LoadOptions } from './lib/load'
import { freePort, loadAverage, measureCpu, pidsByComm, startChild, waitHttp, type Child } from './lib/proc'
import { render, sectionTitle, writeSection, type Report, type Row } from './lib/report'
import { BENCH_PRICE, BENCH_SLUG, ROOT, startService, type BenchService } from './lib/service'

const { values: opt } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    connections: { type: 'string', default: '64' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '1' },
    pglite: { type: 'boolean', default: false },
    'no-write': { type: 'boolean', default: false },
    /** Runs the service under `bun --cpu-prof --cpu-prof-md` (profile in bench/.out/); implies --no-write. */
    profile: { type: 'boolean', default: false },
    /** Diagnosis only: the service without its in-process flusher (FLUSHER=0); implies --no-write. */
    'no-flusher': { type: 'boolean', default: false },
    /** The flusher as its own process beside an API with FLUSHER=0 (the scaled-out layout); its own section. */
    'flusher-process': { type: 'boolean', default: false },
    /** Diagnosis only: a subset of the rows, comma-separated (direct,passthrough,floor,paid); implies --no-write. */
    rows: { type: 'string', default: 'direct,passthrough,floor,paid' },
    /** Every upstream answer waits this long (a realistic API); written as its own section. */
    'upstream-delay': { type: 'string', default: '0' },
  },
})
const connections = Number(opt.connections)
const durationS = Number(opt.duration)
const warmupS = Number(opt.warmup)
const rounds = Number(opt.rounds)
const upstreamDelayMs = Number(opt['upstream-delay'])
const BUN = join(ROOT, 'node_modules', '.bin', 'bun')
const OUT = join(ROOT, 'bench', '.out', `paid-call-${Date.now()}`)
const BODY = JSON.stringify({ q: 'bench query' })

const children: Child[] = []
let svc: BenchService | null = null

async function cleanup() {
  for (const c of children.reverse()) await c.stop().catch(() => {})
  if (svc) await svc.stop().catch((e) => console.error('cleanup:', e))
}
process.on('SIGINT', async () => {
  await cleanup()
  process.exit(130)
})

try {
  console.error('sampling background load (2 s)...')
  const loadBefore = loadAverage()
  const bg = await measureCpu({}, () => Bun.sleep(2000))
  const machine = await describeMachine()

  const upPort = freePort()
  const upstream = startChild(
    'fake-upstream',
    [BUN, 'bench/fake-upstream.ts'],
    { PORT: String(upPort), UPSTREAM_DELAY_MS: String(upstreamDelayMs) },
    join(await ensureOut(), 'upstream.log'),
  )
  children.push(upstream)
  const upstreamUrl = `http://127.0.0.1:${upPort}`
  await waitHttp(upstreamUrl, upstream)
  const passPort = freePort()
  const pass = startChild('passthrough', [BUN, 'bench/passthrough.ts'], { PORT: String(passPort), UPSTREAM_URL: upstreamUrl }, join(OUT, 'passthrough.log'))
  children.push(pass)
  const passUrl = `http://127.0.0.1:${passPort}`
  await waitHttp(passUrl, pass)
  const floorPort = freePort()
  const floor = startChild(
    'ledger-floor',
    [BUN, 'bench/passthrough.ts'],
    { PORT: String(floorPort), UPSTREAM_URL: upstreamUrl, LEDGER_FLOOR_REDIS_URL: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379' },
    join(OUT, 'ledger-floor.log'),
  )
  children.push(floor)
  const floorUrl = `http://127.0.0.1:${floorPort}`
  await waitHttp(floorUrl, floor)
  console.error('starting the service...')
  svc = await startService({ port: freePort(), upstreamUrl, outDir: OUT, pglite: opt.pglite!, profile: opt.profile!, flusher: !opt['no-flusher'], flusherProcess: opt['flusher-process'] })
  machine.push(`Service: ${svc.postgres === 'external' ? 'external Postgres (a fresh database)' : 'embedded PGlite'}, Redis at ${process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'}, LOG=silent, flusher ${svc.flusher ? (opt['flusher-process'] ? 'on, as its own process (`bun run flusher`) beside the API' : 'on') : '**off (diagnosis run)**'}, rate limit and caps opened wide`)

  const { accountId, token } = await svc.signup()
  const funded = await svc.fund(accountId)
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` }
  await sanityCheck(svc.url, passUrl, upstreamUrl, headers)

  const wanted = new Set(opt.rows!.split(','))
  const targets = [
    { key: 'direct', name: 'upstream direct', url: `${upstreamUrl}/search`, hop: null as Child | null },
    { key: 'passthrough', name: 'passthrough', url: `${passUrl}/search`, hop: pass as Child | null },
    { key: 'floor', name: 'ledger floor', url: `${floorUrl}/search`, hop: floor as Child | null },
    { key: 'paid', name: 'paid call', url: `${svc.url}/v1/call/${BENCH_SLUG}`, hop: svc.child as Child | null },
  ].filter((t) => wanted.has(t.key))
  const allRows = targets.length === 4
  const rows: Row[] = []
  let paidClientOk = 1 // the sanity call
  let paidRuns = 0
  for (let round = 1; round <= rounds; round++) {
    for (const t of targets) {
      const load: LoadOptions = { url: t.url, connections, durationS, body: BODY, headers }
      console.error(`round ${round}: ${t.name}: warm-up ${warmupS} s, then ${durationS} s`)
      const warm = await runLoad({ ...load, durationS: warmupS })
      const groups = {
        upstream: () => [upstream.proc.pid],
        // The service's hop includes its flusher process when it runs as one.
        ...(t.hop ? { hop: () => [t.hop!.proc.pid, ...(t.hop === svc!.child ? svc!.extraPids() : [])] } : {}),
        redis: () => pidsByComm('redis-server'),
        postgres: () => pidsByComm('postgres'),
      }
      const m = await measureCpu(groups, () => runLoad(load))
      if (t.name === 'paid call') {
        paidClientOk += warm.ok + m.value.ok
        paidRuns += 2
      }
      const ours = m.value.clientCpuPct + Object.values(m.groupPct).reduce((a, b) => a + b, 0)
      const others = Math.max(0, m.machineBusyPct * availableParallelism() - ours - m.irqPct - m.stealPct)
      const cpu = { ...m.groupPct, irq: m.irqPct, steal: m.stealPct, others }
      rows.push({ round, name: t.name, load: m.value, machineBusyPct: m.machineBusyPct, cpu, loadAfter: loadAverage() })
      console.error(`  ${Math.round(m.value.reqPerSec)} req/s, p50 ${m.value.p50} ms, p99 ${m.value.p99} ms, machine ${m.machineBusyPct}% busy`)
    }
  }

  console.error('checking the ledger...')
  const ledger = await checkLedger(svc, { accountId, funded, price: BENCH_PRICE, clientOk: paidClientOk, maxInFlightDropped: connections * paidRuns })
  const report: Report = {
    command: ['./node_modules/.bin/bun run bench', ...Bun.argv.slice(2)].join(' '),
    upstreamDelayMs,
    at: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    machine,
    nproc: availableParallelism(),
    background: { loadBefore, busyPct: bg.machineBusyPct },
    connections,
    durationS,
    warmupS,
    rows,
    medians: medians(rows),
    ledger,
    loadAfter: loadAverage(),
  }
  const section = render(report)
  console.log(section)
  if (opt.profile) console.error(`CPU profile of the service: ${OUT}/ (summarise with: bun bench/profile-summary.ts ${OUT}/<file>.cpuprofile)`)
  if (!opt['no-write'] && !opt.profile && !opt['no-flusher'] && allRows) {
    writeSection(join(ROOT, 'bench', 'RESULTS.md'), section, upstreamDelayMs)
    console.error(`wrote the "${sectionTitle(upstreamDelayMs).slice(3)}" section of bench/RESULTS.md`)
  }
  await cleanup()
  process.exit(ledger.exact ? 0 : 1)
} catch (e) {
  console.error(e)
  console.error(`logs: ${OUT}`)
  await cleanup()
  process.exit(1)
}

async function ensureOut(): Promise<string> {
  await Bun.write(join(OUT, '.keep'), '')
  return OUT
}

/** One request per row before any load: the three answer, and the paid one charges the price. */
async function sanityCheck(svcUrl: string, passUrl: string, upstreamUrl: string, headers: Record<string, string>) {
  const direct = await (await fetch(`${upstreamUrl}/search`, { method: 'POST', headers, body: BODY })).text()
  const viaPass = await (await fetch(`${passUrl}/search`, { method: 'POST', headers, body: BODY })).text()
  if (viaPass !== direct) throw new Error('the passthrough does not return the upstream answer')
  const res = await fetch(`${svcUrl}/v1/call/${BENCH_SLUG}`, { method: 'POST', headers, body: BODY })
  const paid = (await res.json()) as { charged?: number; result?: unknown }
  if (res.status !== 200 || paid.charged !== BENCH_PRICE || JSON.stringify(paid.result) !== JSON.stringify(JSON.parse(direct)))
    throw new Error(`the paid call answered ${res.status}: ${JSON.stringify(paid)}`)
}

function medians(rows: Row[]): Report['medians'] {
  const med = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b)
    const mid = Math.floor(s.length / 2)
    return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
  }
  const out: Report['medians'] = {}
  for (const name of [...new Set(rows.map((r) => r.name))]) {
    const rs = rows.filter((r) => r.name === name).map((r) => r.load)
    out[name] = { reqPerSec: med(rs.map((r) => r.reqPerSec)), p50: med(rs.map((r) => r.p50)), p99: med(rs.map((r) => r.p99)) }
  }
  return out
}

async function describeMachine(): Promise<string[]> {
  const cpuModel = /model name\s*:\s*(.+)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? 'unknown CPU'
  const bunVersion = (await new Response(Bun.spawn([BUN, '--version']).stdout).text()).trim()
  const client = clientRuntime()[0]!
  const clientVersion = client.endsWith('node') ? `Node ${(await new Response(Bun.spawn([client, '--version']).stdout).text()).trim()}` : `Bun ${Bun.version}`
  const autocannon = JSON.parse(readFileSync(join(ROOT, 'node_modules', 'autocannon', 'package.json'), 'utf8')).version
  const Redis = (await import('ioredis')).default
  const r = new Redis(process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379')
  const redisVersion = /redis_version:(\S+)/.exec(await r.info('server'))?.[1] ?? '?'
  r.disconnect()
  let pgVersion = 'n/a'
  if (!opt.pglite) {
    const sql = postgres(process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', { max: 1, onnotice: () => {} })
    pgVersion = (await sql<{ server_version: string }[]>`show server_version`)[0]!.server_version
    await sql.end()
  }
  return [
    `nproc ${availableParallelism()} (${cpuModel}), Linux ${release()}`,
    `Servers: Bun ${bunVersion}; client: autocannon ${autocannon} on ${clientVersion}, in its own process on the same machine`,
    `Redis ${redisVersion}, PostgreSQL ${pgVersion}, all on loopback and shared with the other engineers' test runs`,
  ]
}
