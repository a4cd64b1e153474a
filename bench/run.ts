/**
 * The paid-call bench (issue 2): throughput and p50/p99 of POST /v1/call/{slug} next to two
 * baselines measured in the same run — the fake upstream called directly, and a bare Bun `fetch`
 * passthrough to it with no ledger. Prints the results and writes them into its own section of
 * bench/RESULTS.md, then checks that the ledger is exact after the load.
 *
 *   ./node_modules/.bin/bun run bench [--connections 64] [--duration 10] [--warmup 2] [--rounds 1] [--pglite] [--no-write] [--profile] [--no-flusher] [--rows paid]
 *       [--baseline /work/bench-base] [--no-evalsha]
 *   ./node_modules/.bin/bun run bench --latency [--rate 1000] [--baseline <dir>] ...   (bench/latency.ts: added latency at a fixed rate)
 *
 * Optional rows (all on by default; each skipped with its reason when the service cannot serve it):
 *   depth4    the same paid call with the token of a depth-4 sub-agent (docs/api.md §8), beside the owner's
 *   mcp       the same capability through POST /mcp, tools/call call_capability (docs/api.md §10)
 *   bare      the same paid call through bench/ledger-work.ts, its own service instance: callCapability on
 *             the service's own services (scripts, batching, flusher) with no HTTP API around it (no
 *             Elysia, no per-request bearer lookup, no edge checks, no log or metrics): "paid call (ledger work alone)"
 *   baseline  with --baseline <dir>: the service of that checkout (an earlier commit with node_modules),
 *             started beside ours and measured in the same rounds, interleaved: "paid call (baseline <commit>)"
 * Then redis-benchmark runs the debit script alone (EVALSHA, the script's own ceiling) and a
 * "Ratios" table sets every row against the ledger floor, depth-4 against owner, MCP against REST,
 * current against baseline.
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
import { recordedCommand, resolveBaseline, baselineName, type Baseline } from './lib/baseline'
import type { EvalshaResult } from './lib/evalsha'
import { checkLedger, type LedgerCheck } from './lib/ledger-check'
import { mcpRequest } from './lib/mcp'
import { depthAgent } from './lib/sub-agents'
import { clientRuntime, runLoad, type LoadOptions } from './lib/load'
import { IMAGE_ALLOCATOR_ENV, freePort, loadAverage, measureCpu, pidsByComm, postgresBackendsOf, startChild, waitHttp, type Child } from './lib/proc'
import { median } from './lib/ratios'
import { render, sectionTitle, writeSection, type Report, type Row, type Skipped } from './lib/report'
import { BENCH_PRICE, BENCH_SLUG, ROOT, startService, type BenchService } from './lib/service'
import { drainLedger, ledgerLag } from './lib/ledger-lag'

// The rate-fixed latency bench shares the command (`bun run bench --latency`) but is its own script.
if (Bun.argv.includes('--latency')) {
  await import('./latency')
  await new Promise(() => {}) // latency.ts exits the process itself
}

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
    /** A subset of the rows, comma-separated (direct,passthrough,floor,paid,bare,depth4,mcp,baseline); leaving out a core row implies --no-write. */
    rows: { type: 'string', default: 'direct,passthrough,floor,paid,bare,depth4,mcp,baseline' },
    /** A checkout of an earlier commit (with node_modules): its service is measured as an extra row in the same rounds. */
    baseline: { type: 'string' },
    /** Skip the redis-benchmark run of the debit script. */
    'no-evalsha': { type: 'boolean', default: false },
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

const CORE_ROWS = ['direct', 'passthrough', 'floor', 'paid']
const baseline: Baseline | null = resolveBaseline(opt.baseline)

const children: Child[] = []
let svc: BenchService | null = null
let baseSvc: BenchService | null = null
let bareSvc: BenchService | null = null

async function cleanup() {
  for (const c of children.reverse()) await c.stop().catch(() => {})
  if (svc) await svc.stop().catch((e) => console.error('cleanup:', e))
  if (baseSvc) await baseSvc.stop().catch((e) => console.error('cleanup (baseline):', e))
  if (bareSvc) await bareSvc.stop().catch((e) => console.error('cleanup (ledger work alone):', e))
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
  machine.push(`Service: ${svc.postgres === 'external' ? 'external Postgres (a fresh database)' : 'embedded PGlite'}, Redis at ${process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'}, LOG=silent, flusher ${svc.flusher ? (opt['flusher-process'] ? 'on, as its own process (`bun run flusher`) beside the API' : 'on') : '**off (diagnosis run)**'}, rate limit and caps opened wide; every Bun process with the image's allocator settings, the bench's environment first (${Object.entries(IMAGE_ALLOCATOR_ENV).map(([k, v]) => `${k}=${process.env[k] ?? v}`).join(' ') || 'none'})`)

  const wanted = new Set(opt.rows!.split(','))
  if (baseline && wanted.has('baseline')) {
    console.error(`starting the baseline service (${baseline.root}, ${baseline.commit})...`)
    baseSvc = await startService({ port: freePort(), upstreamUrl, outDir: join(OUT, 'baseline'), pglite: opt.pglite!, flusher: !opt['no-flusher'], flusherProcess: opt['flusher-process'], root: baseline.root })
    machine.push(`Baseline: the service of ${baseline.root} at commit ${baseline.commit}, started the same way beside ours (its own database and Redis prefix) and measured in the same rounds, interleaved`)
  }

  if (wanted.has('bare')) {
    console.error('starting the ledger-work-alone service (bench/ledger-work.ts)...')
    bareSvc = await startService({ port: freePort(), upstreamUrl, outDir: join(OUT, 'ledger-work'), pglite: opt.pglite!, flusher: !opt['no-flusher'], entry: 'bench/ledger-work.ts' })
  }

  const { accountId, token } = await svc.signup()
  const funded = await svc.fund(accountId)
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` }
  await sanityCheck(svc.url, passUrl, upstreamUrl, headers)
  /** 2xx answers of the paid routes per service, for its ledger check (the sanity calls included). */
  const clientOk = new Map<BenchService, number>([[svc, 1]])
  const runs = new Map<BenchService, number>([[svc, 0]])
  /** A funded account on another service of the run, its first paid call made and counted. */
  const accountOn = async (other: BenchService, what: string) => {
    const acct = await other.signup()
    const a = { accountId: acct.accountId, funded: await other.fund(acct.accountId), headers: { 'content-type': 'application/json', authorization: `Bearer ${acct.token}` } }
    await paidOnce(other.url, a.headers, what)
    clientOk.set(other, 1)
    runs.set(other, 0)
    return a
  }
  const base = baseSvc ? await accountOn(baseSvc, 'the baseline paid call') : null
  const bare = bareSvc ? await accountOn(bareSvc, 'the ledger-work-alone paid call') : null

  interface Target {
    key: string
    name: string
    url: string
    hop: Child | null
    service?: BenchService
    headers?: Record<string, string>
    body?: string
    idReplacement?: boolean
  }
  const skipped: Skipped[] = []
  const skip = (row: string, reason: string) => {
    console.error(`${row}: skipped (${reason})`)
    skipped.push({ row, reason })
  }
  const paidUrl = `${svc.url}/v1/call/${BENCH_SLUG}`
  const targets: Target[] = [
    { key: 'direct', name: 'upstream direct', url: `${upstreamUrl}/search`, hop: null },
    { key: 'passthrough', name: 'passthrough', url: `${passUrl}/search`, hop: pass },
    { key: 'floor', name: 'ledger floor', url: `${floorUrl}/search`, hop: floor },
    { key: 'paid', name: 'paid call', url: paidUrl, hop: svc.child, service: svc },
  ]
  if (bareSvc && bare)
    targets.push({ key: 'bare', name: 'paid call (ledger work alone)', url: `${bareSvc.url}/v1/call/${BENCH_SLUG}`, hop: bareSvc.child, service: bareSvc, headers: bare.headers })
  if (baseSvc && base)
    targets.push({ key: 'baseline', name: baselineName('paid call', baseline!), url: `${baseSvc.url}/v1/call/${BENCH_SLUG}`, hop: baseSvc.child, service: baseSvc, headers: base.headers })
  if (wanted.has('depth4')) {
    const deep = await depthAgent(svc.url, token)
    if ('skip' in deep) skip('paid call (depth-4 agent)', deep.skip)
    else {
      const h = { 'content-type': 'application/json', authorization: `Bearer ${deep.token}` }
      await paidOnce(svc.url, h, 'the depth-4 paid call')
      clientOk.set(svc, clientOk.get(svc)! + 1)
      targets.push({ key: 'depth4', name: 'paid call (depth-4 agent)', url: paidUrl, hop: svc.child, service: svc, headers: h })
    }
  }
  if (wanted.has('mcp')) {
    const mcp = await mcpRequest(svc.url, token, BENCH_SLUG, JSON.parse(BODY), BENCH_PRICE)
    if ('skip' in mcp) skip('paid call (MCP)', mcp.skip)
    else {
      clientOk.set(svc, clientOk.get(svc)! + 1) // the probe's call
      const name = `paid call (MCP${mcp.session ? ', one session' : ', stateless'})`
      targets.push({ key: 'mcp', name, url: `${svc.url}/mcp`, hop: svc.child, service: svc, headers: mcp.headers, body: mcp.body, idReplacement: true })
    }
  }
  const chosen = targets.filter((t) => wanted.has(t.key))
  const allRows = CORE_ROWS.every((k) => wanted.has(k))
  const rows: Row[] = []
  for (let round = 1; round <= rounds; round++) {
    // An even round runs its rows in the reverse order (ABBA), as bench/proxy.ts does: no row always
    // follows the same one and carries what it left behind, or a drift of the machine, in every round.
    for (const t of round % 2 === 0 ? [...chosen].reverse() : chosen) {
      const load: LoadOptions = { url: t.url, connections, durationS, body: t.body ?? BODY, headers: t.headers ?? headers, idReplacement: t.idReplacement }
      console.error(`round ${round}: ${t.name}: warm-up ${warmupS} s, then ${durationS} s`)
      const warm = await runLoad({ ...load, durationS: warmupS })
      const owner = t.service
      const groups = {
        upstream: () => [upstream.proc.pid],
        // The service's hop includes its flusher process when it runs as one.
        ...(t.hop ? { hop: () => [t.hop!.proc.pid, ...(owner ? owner.extraPids() : [])] } : {}),
        redis: () => pidsByComm('redis-server'),
        postgres: () => pidsByComm('postgres'),
        // The backends of the row's own database (the flusher's writes), apart from the shared server's other clients.
        ...(owner?.dbName ? { pgOwn: () => postgresBackendsOf(owner.dbName!) } : {}),
      }
      const m = await measureCpu(groups, () => runLoad(load))
      if (owner) {
        clientOk.set(owner, clientOk.get(owner)! + warm.ok + m.value.ok)
        runs.set(owner, runs.get(owner)! + 2)
      }
      const { pgOwn: _inPostgres, ...counted } = m.groupPct
      const ours = m.value.clientCpuPct + Object.values(counted).reduce((a, b) => a + b, 0)
      const others = Math.max(0, m.machineBusyPct * availableParallelism() - ours - m.irqPct - m.stealPct)
      const cpu = { ...counted, ...(m.groupPctExact.pgOwn === undefined ? {} : { pgOwn: m.groupPctExact.pgOwn }), irq: m.irqPct, steal: m.stealPct, others }
      rows.push({ round, name: t.name, load: m.value, machineBusyPct: m.machineBusyPct, cpu, loadAfter: loadAverage() })
      console.error(`  ${Math.round(m.value.reqPerSec)} req/s, p50 ${m.value.p50} ms, p99 ${m.value.p99} ms, machine ${m.machineBusyPct}% busy`)
      // The next row must not pay for this one's write-behind (nor this one's figures hide it).
      if (owner?.flusher) {
        const lag = await ledgerLag(owner.url)
        const d = await drainLedger(owner.url)
        console.error(`  ledger lag at the end ${lag} entries, drained in ${d.ms} ms`)
      }
    }
  }

  let evalsha: Report['evalsha'] = null
  if (!opt['no-evalsha']) evalsha = await debitCeiling(baseline)

  console.error('checking the ledger...')
  const check = (s: BenchService, a: { accountId: string; funded: number }) =>
    checkLedger(s, { accountId: a.accountId, funded: a.funded, price: BENCH_PRICE, clientOk: clientOk.get(s)!, maxInFlightDropped: connections * Math.max(1, runs.get(s)!) })
  const ledger = await check(svc, { accountId, funded })
  const otherLedgers: { label: string; check: LedgerCheck }[] = []
  if (bareSvc && bare) otherLedgers.push({ label: 'ledger work alone', check: await check(bareSvc, bare) })
  if (baseSvc && base) otherLedgers.push({ label: `baseline ${baseline!.commit}`, check: await check(baseSvc, base) })
  const report: Report = {
    command: recordedCommand('./node_modules/.bin/bun run bench', Bun.argv.slice(2), baseline),
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
    otherLedgers,
    skipped,
    evalsha,
    baseline: baseline?.commit ?? null,
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
  process.exit(ledger.exact && otherLedgers.every((l) => l.check.exact) ? 0 : 1)
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

/** One paid call that must charge the price (a row's caller or service checked before its load). */
async function paidOnce(svcUrl: string, headers: Record<string, string>, what: string) {
  const res = await fetch(`${svcUrl}/v1/call/${BENCH_SLUG}`, { method: 'POST', headers, body: BODY })
  const body = (await res.json()) as { charged?: number }
  if (res.status !== 200 || body.charged !== BENCH_PRICE) throw new Error(`${what} answered ${res.status}: ${JSON.stringify(body)}`)
}

/**
 * redis-benchmark running the debit script alone, with the connections of the HTTP rows: the ceiling
 * of the script itself, beside the paid call's throughput. The baseline's script too, through the
 * baseline tree's own bench/lib/evalsha.ts (its own debit wrapper builds its keys and arguments).
 */
async function debitCeiling(b: Baseline | null): Promise<Report['evalsha']> {
  const runsOf = [{ clients: connections, pipeline: 1, requests: Math.max(20_000, 20_000 * durationS) }]
  const url = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
  const out: NonNullable<Report['evalsha']> = []
  const trees: [string, string][] = [['current', ROOT], ...(b ? ([[`baseline ${b.commit}`, b.root]] as [string, string][]) : [])]
  for (const [label, root] of trees) {
    console.error(`redis-benchmark of the debit script (${label})...`)
    try {
      const mod = (await import(join(root, 'bench', 'lib', 'evalsha.ts'))) as { evalshaCeiling: (u: string, p: number, r: typeof runsOf) => Promise<{ script: string; results: EvalshaResult[] }> }
      const r = await mod.evalshaCeiling(url, BENCH_PRICE, runsOf)
      out.push({ label, script: r.script, result: r.results[0]! })
    } catch (e) {
      out.push({ label, failed: String(e).split('\n')[0]!.slice(0, 200) })
    }
  }
  return out
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
  const out: Report['medians'] = {}
  for (const name of [...new Set(rows.map((r) => r.name))]) {
    const rs = rows.filter((r) => r.name === name).map((r) => r.load)
    out[name] = { reqPerSec: median(rs.map((r) => r.reqPerSec)), p50: median(rs.map((r) => r.p50)), p99: median(rs.map((r) => r.p99)) }
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
