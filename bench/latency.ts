/**
 * Added latency at a fixed rate (issues 12–19's latency figure, the way gateway benchmarks publish
 * it): bench/lib/paced-loop.mjs sends a fixed 1,000 req/s (open loop: request i is due at
 * start + i / rate whatever the server does, its latency counted from that due time) to the fake
 * upstream directly, the ledger floor, the paid call and the proxy (JSON),
 * and reports p50, p99 and p99.9 with microsecond resolution, and the latency each row **adds** over
 * the upstream called directly in the same round (row − direct) at p50 and p99. With --baseline the
 * baseline checkout's paid call and proxy are measured in the same rounds, interleaved.
 * Writes its own section of bench/RESULTS.md ("Added latency at a fixed 1,000 req/s"), then checks
 * that each service's ledger is exact.
 *
 *   ./node_modules/.bin/bun run bench --latency [--rate 1000] [--connections 32] [--duration 10] [--warmup 2] [--rounds 1]
 *       [--rows direct,floor,paid,proxy,baseline] [--baseline /work/bench-base] [--no-write]
 *
 * Needs Redis at BENCH_REDIS_URL (default redis://127.0.0.1:6379) and Postgres at BENCH_PG_URL
 * (default postgres://postgres@127.0.0.1:5432/postgres), where each service gets a fresh database.
 */
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { baselineName, recordedCommand, resolveBaseline } from './lib/baseline'
import { checkLedger, type LedgerCheck } from './lib/ledger-check'
import { runRate, type RateResult } from './lib/load'
import { freePort, loadAverage, measureCpu, pidsByComm, startChild, waitHttp, type Child } from './lib/proc'
import { replaceSection } from './lib/sections'
import { BENCH_PRICE, BENCH_SLUG, ROOT, benchCatalog, startService, type BenchService } from './lib/service'

const { values: opt } = parseArgs({
  args: Bun.argv.slice(2).filter((a) => a !== '--latency'),
  options: {
    rate: { type: 'string', default: '1000' },
    connections: { type: 'string', default: '32' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '1' },
    rows: { type: 'string', default: 'direct,floor,paid,proxy,baseline' },
    baseline: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
    /** Each service's flusher as its own process (`bun run flusher`) beside an API with FLUSHER=0. */
    'flusher-process': { type: 'boolean', default: false },
    /** Diagnosis: the current tree's service under `bun --cpu-prof` (profile in bench/.out/latency-*); implies --no-write. */
    profile: { type: 'boolean', default: false },
  },
})
const RATE = Number(opt.rate)
const CONNECTIONS = Number(opt.connections)
const DURATION = Number(opt.duration)
const WARMUP = Number(opt.warmup)
const ROUNDS = Number(opt.rounds)
const BUN = join(ROOT, 'node_modules', '.bin', 'bun')
const OUT = join(ROOT, 'bench', '.out', `latency-${Date.now()}`)
const BODY = JSON.stringify({ q: 'bench query' })
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
const TITLE = `## Added latency at a fixed ${RATE.toLocaleString('en-US')} req/s`
const BEGIN = `<!-- latency-${RATE}:begin (written by bench/latency.ts, \`bun run bench --latency\`; do not edit by hand) -->`
const END = `<!-- latency-${RATE}:end -->`
/** A row that kept less than this share of the asked rate measured a saturated server, not the rate. */
const KEPT = 0.98

/** The bench catalog with its provider also open as a proxy route at the paid call's price. */
function catalog(upstreamUrl: string) {
  const c = benchCatalog(upstreamUrl)
  return { ...c, providers: { benchsearch: { ...c.providers.benchsearch, proxy: { price: BENCH_PRICE, paths: ['/'], house: { allow: ['/'] } } } } }
}

interface Row {
  round: number
  name: string
  r: RateResult
  cpu: Record<string, number>
  machineBusyPct: number
}

const children: Child[] = []
const services: BenchService[] = []
async function cleanup() {
  for (const c of children.splice(0).reverse()) await c.stop().catch(() => {})
  for (const s of services.splice(0)) await s.stop().catch((e) => console.error('cleanup:', e))
}
process.on('SIGINT', async () => {
  await cleanup()
  process.exit(130)
})

interface Paid {
  svc: BenchService
  accountId: string
  funded: number
  headers: Record<string, string>
  clientOk: number
  runs: number
}

async function paidService(root: string | undefined, upstreamUrl: string, outDir: string): Promise<Paid> {
  const svc = await startService({ port: freePort(), upstreamUrl, outDir, pglite: false, catalog: catalog(upstreamUrl), root, flusherProcess: opt['flusher-process'], profile: opt.profile && !root })
  services.push(svc)
  const { accountId, token } = await svc.signup()
  const funded = await svc.fund(accountId)
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` }
  // One call per route before any load: both answer the upstream's body and charge.
  for (const path of [`/v1/call/${BENCH_SLUG}`, '/proxy/benchsearch/search']) {
    const res = await fetch(`${svc.url}${path}`, { method: 'POST', headers, body: BODY })
    const text = await res.text()
    if (res.status !== 200) throw new Error(`${path} on ${root ?? 'the current tree'} answered ${res.status}: ${text.slice(0, 200)}`)
  }
  return { svc, accountId, funded, headers, clientOk: 2, runs: 0 }
}

async function main(): Promise<number> {
  const loadBefore = loadAverage()
  const wanted = new Set(opt.rows!.split(','))
  const baseline = resolveBaseline(opt.baseline)
  const upPort = freePort()
  Bun.spawnSync(['mkdir', '-p', OUT])
  const upstream = startChild('fake-upstream', [BUN, 'bench/fake-upstream.ts'], { PORT: String(upPort) }, join(OUT, 'upstream.log'), { cwd: ROOT })
  children.push(upstream)
  const upstreamUrl = `http://127.0.0.1:${upPort}`
  await waitHttp(upstreamUrl, upstream)
  const floorPort = freePort()
  const floor = startChild('ledger-floor', [BUN, 'bench/passthrough.ts'], { PORT: String(floorPort), UPSTREAM_URL: upstreamUrl, LEDGER_FLOOR_REDIS_URL: REDIS_URL }, join(OUT, 'ledger-floor.log'), {
    cwd: ROOT,
  })
  children.push(floor)
  await waitHttp(`http://127.0.0.1:${floorPort}`, floor)
  console.error('starting the service...')
  const cur = await paidService(undefined, upstreamUrl, join(OUT, 'current'))
  let base: Paid | null = null
  if (baseline && wanted.has('baseline')) {
    console.error(`starting the baseline service (${baseline.root}, ${baseline.commit})...`)
    base = await paidService(baseline.root, upstreamUrl, join(OUT, 'baseline'))
  }

  const targets: { key: string; name: string; url: string; hop: Child | null; paid?: Paid; headers: Record<string, string> }[] = [
    { key: 'direct', name: 'upstream direct', url: `${upstreamUrl}/search`, hop: null, headers: { 'content-type': 'application/json' } },
    { key: 'floor', name: 'ledger floor', url: `http://127.0.0.1:${floorPort}/search`, hop: floor, headers: { 'content-type': 'application/json' } },
    { key: 'paid', name: 'paid call', url: `${cur.svc.url}/v1/call/${BENCH_SLUG}`, hop: cur.svc.child, paid: cur, headers: cur.headers },
    ...(base ? [{ key: 'paid', name: baselineName('paid call', baseline!), url: `${base.svc.url}/v1/call/${BENCH_SLUG}`, hop: base.svc.child, paid: base, headers: base.headers }] : []),
    { key: 'proxy', name: 'proxy (JSON)', url: `${cur.svc.url}/proxy/benchsearch/search`, hop: cur.svc.child, paid: cur, headers: cur.headers },
    ...(base ? [{ key: 'proxy', name: baselineName('proxy (JSON)', baseline!), url: `${base.svc.url}/proxy/benchsearch/search`, hop: base.svc.child, paid: base, headers: base.headers }] : []),
  ]
  const chosen = targets.filter((t) => wanted.has(t.key))
  const rows: Row[] = []
  for (let round = 1; round <= ROUNDS; round++)
    for (const t of chosen) {
      const o = { url: t.url, connections: CONNECTIONS, body: BODY, headers: t.headers, rate: RATE }
      console.error(`round ${round}: ${t.name}: ${RATE} req/s, warm-up ${WARMUP} s, then ${DURATION} s`)
      const warm = WARMUP > 0 ? await runRate({ ...o, durationS: WARMUP }) : null
      const groups = {
        upstream: () => [upstream.proc.pid],
        ...(t.hop ? { hop: () => [t.hop!.proc.pid] } : {}),
        redis: () => pidsByComm('redis-server'),
        postgres: () => pidsByComm('postgres'),
      }
      const m = await measureCpu(groups, () => runRate({ ...o, durationS: DURATION }))
      if (t.paid) {
        t.paid.clientOk += (warm?.ok ?? 0) + m.value.ok
        t.paid.runs += warm ? 2 : 1
      }
      rows.push({ round, name: t.name, r: m.value, cpu: { ...m.groupPct, irq: m.irqPct, client: m.value.clientCpuPct }, machineBusyPct: m.machineBusyPct })
      console.error(`  kept ${Math.round(m.value.reqPerSec)} req/s; p50 ${m.value.p50} ms, p99 ${m.value.p99} ms, p99.9 ${m.value.p999} ms; non-2xx ${m.value.non2xx}, errors ${m.value.errors}`)
    }

  console.error('checking the ledgers...')
  const ledgers: { label: string; check: LedgerCheck }[] = []
  for (const [label, p] of [['current', cur], ...(base ? [[`baseline ${baseline!.commit}`, base]] : [])] as [string, Paid][])
    ledgers.push({
      label,
      check: await checkLedger(p.svc, { accountId: p.accountId, funded: p.funded, price: BENCH_PRICE, clientOk: p.clientOk, maxInFlightDropped: CONNECTIONS * Math.max(1, p.runs) }),
    })
  const section = render(rows, ledgers, loadBefore)
  console.log(section)
  if (!opt['no-write'] && !opt.profile) {
    replaceSection(join(ROOT, 'bench', 'RESULTS.md'), TITLE, END, section)
    console.error(`wrote the "${TITLE.slice(3)}" section of bench/RESULTS.md`)
  }
  return ledgers.every((l) => l.check.exact) ? 0 : 1
}

function render(rows: Row[], ledgers: { label: string; check: LedgerCheck }[], loadBefore: string): string {
  const ms = (n: number | null) => (n === null || !Number.isFinite(n) ? 'n/a' : n.toFixed(3))
  const signed = (d: number) => `${d < 0 ? '−' : '+'}${Math.abs(d).toFixed(3)}`
  const add = (a: number, b: number | undefined) => (b === undefined || !Number.isFinite(a - b) ? 'n/a' : signed(a - b))
  const us = (pct: number, rps: number) => Math.round((pct / 100 / Math.max(1, rps)) * 1e6)
  const cmd = recordedCommand('./node_modules/.bin/bun run bench --latency', Bun.argv.slice(2).filter((a) => a !== '--latency'), resolveBaseline(opt.baseline))
  const L = [
    TITLE,
    '',
    BEGIN,
    '',
    `Command (from the project root): \`${cmd}\``,
    '',
    `Run at ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')} on ${availableParallelism()} cores shared with other engineers' work (load average before: ${loadBefore}; after: ${loadAverage()}).`,
    `Each row: bench/lib/paced-loop.mjs (on Node, its own process) at a fixed **${RATE.toLocaleString('en-US')} req/s**, open loop: request i is due at start + i / rate whatever the answers do, over a keep-alive pool of ${CONNECTIONS} connections, ${WARMUP} s warm-up (discarded) then ${DURATION} s measured. Latency of every 2xx from its due time (µs resolution), so a request that waited for a free connection or a late server is charged the wait (no coordinated omission). autocannon's \`overallRate\` is not used: it gives each connection a quota per second, sent back to back, which is a saturating burst at the top of every second (the upstream alone: p50 0.60 / p99 6.7 ms under it, 0.12 / 1.6 ms paced). "added" = the row − the upstream called directly in the same round, at the same percentile. A row that kept under ${KEPT * 100}% of the rate says so: it measured a saturated server, not the rate. Each connection still waits for its answer before its next request (no pipelining), so the connections must outnumber rate × latency; a negative "added" is noise between rows measured seconds apart. The client never spins: a worker thread sleeps to each due time (Atomics.wait) and wakes the sender (until 2026-11-25 it spun on setImmediate, which at 1,000 req/s kept one of the 2 cores busy: the upstream alone showed the machine 62% busy, now about 20%).`,
    '',
    '| Round | Row | kept req/s | p50 ms | p99 ms | p99.9 ms | max ms | added p50 ms | added p99 ms | non-2xx | errors | machine busy | µs CPU / req (hop) | µs CPU / req (whole chain, client excluded) |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const x of rows) {
    const direct = rows.find((d) => d.round === x.round && d.name === 'upstream direct')?.r
    const kept = x.r.reqPerSec >= KEPT * RATE ? '' : ' (**rate not kept**)'
    const c = x.cpu
    const chain = (c.upstream ?? 0) + (c.hop ?? 0) + (c.redis ?? 0) + (c.postgres ?? 0) + (c.irq ?? 0)
    L.push(
      `| ${x.round} | ${x.name} | ${Math.round(x.r.reqPerSec).toLocaleString('en-US')}${kept} | ${ms(x.r.p50)} | ${ms(x.r.p99)} | ${ms(x.r.p999)} | ${ms(x.r.max)} | ` +
        `${x.name === 'upstream direct' ? '–' : add(x.r.p50, direct?.p50)} | ${x.name === 'upstream direct' ? '–' : add(x.r.p99, direct?.p99)} | ${x.r.non2xx} | ${x.r.errors + x.r.timeouts} | ${x.machineBusyPct}% | ` +
        `${c.hop === undefined ? '–' : us(c.hop, x.r.reqPerSec)} | ${us(chain, x.r.reqPerSec)} |`,
    )
  }
  if (ROUNDS > 1) {
    const med = (xs: number[]) => {
      const v = [...xs].sort((a, b) => a - b)
      const mid = Math.floor(v.length / 2)
      return v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2
    }
    L.push('', 'Medians over the rounds of the added latency (row − direct, per round):', '', '| Row | added p50 ms | added p99 ms | p99.9 ms |', '|---|---:|---:|---:|')
    for (const name of [...new Set(rows.map((x) => x.name))].filter((n) => n !== 'upstream direct')) {
      const mine = rows.filter((x) => x.name === name)
      const d = (x: Row, k: 'p50' | 'p99') => x.r[k] - (rows.find((y) => y.round === x.round && y.name === 'upstream direct')?.r[k] ?? NaN)
      L.push(`| ${name} | ${signed(med(mine.map((x) => d(x, 'p50'))))} | ${signed(med(mine.map((x) => d(x, 'p99'))))} | ${med(mine.map((x) => x.r.p999)).toFixed(3)} |`)
    }
  }
  L.push(
    '',
    'Rows: **upstream direct** = bench/fake-upstream.ts alone; **ledger floor** = a bare Bun passthrough plus two no-op EVALSHA round trips (bench/passthrough.ts); **paid call** = `POST /v1/call/bench.search`; **proxy (JSON)** = `POST /proxy/benchsearch/search`, the same upstream through the native proxy at the same price; "(baseline …)" rows = the service of the `--baseline` checkout, same rounds. "whole chain" adds upstream, hop, Redis, Postgres and kernel irq time (the client, the load generator, is left out).',
    '',
  )
  for (const { label, check: g } of ledgers)
    L.push(
      `- Ledger (${label}): ${g.exact ? '**exact**' : '**NOT exact**'} — spent ${g.spent.toLocaleString('en-US')} credits = ${g.price} × (${g.serverOk} ok + ${g.otherCharged} client_closed); client saw ${g.clientOk} 2xx; Postgres ${g.pg ? (g.pg.exact ? 'matches' : '**does not match**') : 'not checked'}`,
    )
  L.push('', END)
  return L.join('\n')
}

try {
  const code = await main()
  await cleanup()
  process.exit(code)
} catch (e) {
  console.error(e)
  console.error(`logs: ${OUT}`)
  await cleanup()
  process.exit(1)
}
