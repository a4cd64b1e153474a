/**
 * The proxy bench (issue 5): throughput and p50/p99 of the native passthrough proxy next to the
 * same fake LLM upstream called directly, a bare Bun `fetch` passthrough (streaming, no governance)
 * and the `@portkey-ai/gateway` npm package (started as its package starts it, on Node, and also
 * under Bun), for a small JSON completion and a 20-chunk SSE stream; then time to first SSE byte
 * at concurrency 1. Every server runs in its own process; autocannon (on Node) is the client.
 * Writes its own section of bench/RESULTS.md (between its markers; other sections untouched).
 *
 *   bun bench/proxy.ts [--connections 32] [--duration 5] [--warmup 1] [--rounds 1] [--workloads json,sse] [--ttfb 300] [--no-write] [--profile]
 *       [--rows direct,passthrough,floor,proxy,metered,pipeline,portkey-node,portkey-bun,baseline] [--baseline /work/bench-base]
 *
 * Optional rows (skipped with their reason when the service cannot serve them):
 *   metered   a metered LLM route (docs/api.md §7: `proxy.metered`, dialect openai, a priced model) to the
 *             same upstream, which then reports a real-shaped `usage` (JSON) or a final usage chunk (SSE),
 *             beside the flat-priced route: "our proxy (metered)"
 *   baseline-metered  (not in the default rows) with --baseline <dir>: the metered route on the service
 *             of that checkout too (a tree that knows docs/api.md §7), for an A/B of the metered path
 *   pipeline  the paid-request pipeline alone, flat and metered, around one forwarder (bench/pipeline-floor.ts):
 *             "pipeline floor (flat)", "(metered)" and "(metered, settle not awaited)"; their ratio is
 *             what the ledger's shape alone leaves the metered route against the flat one
 *   baseline  with --baseline <dir>: the flat route on the service of that checkout (an earlier commit
 *             with node_modules), measured in the same loop, interleaved: "our proxy (baseline <commit>)"
 * --profile runs the service under `bun --cpu-prof --cpu-prof-md` (its profile lands in bench/.out/proxy/
 * when the service stops; summarise with bench/profile-summary.ts) and implies --no-write. Give it
 * one row of ours (`--rows proxy` or `--rows metered`) so that the profile is of that route alone.
 * Every row gets µs of CPU per request for its server and for the whole chain (client excluded), and
 * a "Ratios" table sets each row against the ledger floor, metered against flat, current against
 * baseline, and the proxy against Portkey under Bun. With --rounds N every row runs N times,
 * interleaved (round 1's rows, then round 2's, ...), and the ratios are of the medians: on two
 * shared cores where each process lands moves one row by ±25% from one run to the next. An even
 * round runs its rows in the reverse order (ABBA): the machine's speed drifts by a fifth for tens
 * of seconds at a time, and a row that always ran right after another (the metered route after the
 * flat one) saw another slice of that drift, and whatever the row before it left behind, in every
 * round (docs/decisions.md, issue 14, eighteenth round).
 *
 * Needs Redis at BENCH_REDIS_URL (default redis://127.0.0.1:6379) and Postgres at BENCH_PG_URL
 * (default postgres://postgres@127.0.0.1:5432/postgres), where it creates and drops a database.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { baselineName, resolveBaseline } from './lib/baseline'
import { runLoad, type LoadResult } from './lib/load'
import { freePort, loadAverage, measureCpu, pidsByComm, startChild, waitHttp, type Child } from './lib/proc'
import { median, overFloor, ratioTable, type RatioPair } from './lib/ratios'
import { ROOT, startService, type BenchService } from './lib/service'
import { drainLedger, ledgerLag } from './lib/ledger-lag'
import { SSE_CHUNKS } from './proxy-upstream'

const { values: opt } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    connections: { type: 'string', default: '32' },
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '1' },
    /** The workloads to run (json,sse); one alone profiles that workload. */
    workloads: { type: 'string', default: 'json,sse' },
    /** Every row measured this many times, interleaved; the ratios take each row's median. */
    rounds: { type: 'string', default: '1' },
    ttfb: { type: 'string', default: '300' },
    'no-write': { type: 'boolean', default: false },
    /** Profiles the service (bun --cpu-prof); implies --no-write. */
    profile: { type: 'boolean', default: false },
    rows: { type: 'string', default: 'direct,passthrough,floor,proxy,metered,pipeline,portkey-node,portkey-bun,baseline' },
    /** A checkout of an earlier commit (with node_modules): its proxy is measured as an extra row. */
    baseline: { type: 'string' },
  },
})
const WANTED = new Set(opt.rows!.split(','))
const BASELINE = resolveBaseline(opt.baseline)
const CONNECTIONS = Number(opt.connections)
const DURATION = Number(opt.duration)
const WARMUP = Number(opt.warmup)
const ROUNDS = Math.max(1, Number(opt.rounds))
const TTFB_N = Number(opt.ttfb)
const OUT = join(ROOT, 'bench', '.out', 'proxy')
const RESULTS = join(ROOT, 'bench', 'RESULTS.md')
const BEGIN = '<!-- proxy:begin (written by bench/proxy.ts; do not edit by hand) -->'
const END = '<!-- proxy:end -->'
const BUN = join(ROOT, 'node_modules', '.bin', 'bun')
const PORTKEY = join(ROOT, 'node_modules', '@portkey-ai', 'gateway', 'build', 'start-server.js')
const PRICE = 3

const body = (stream: boolean) => JSON.stringify({ model: 'bench-model', stream, messages: [{ role: 'user', content: 'Say hello.' }] })

interface Target {
  /** The --rows key. */
  key: string
  name: string
  url: string
  headers: Record<string, string>
  pids: () => number[]
  /** The server's log, quoted when it fails a workload. */
  log?: string
  /** One of our services: its ledger lag is read when the row ends and drained before the next. */
  svcUrl?: string
}

/** One target's time-to-first-byte figures (FirstBytes), or why it has none. */
type Ttfb = { target: string; failed?: string } & Partial<FirstBytes>

interface Row {
  round: number
  target: string
  workload: 'json' | 'sse'
  load: LoadResult | null
  failed?: string
  machineBusyPct?: number
  cpu?: Record<string, number>
}

/** The metered route's catalog entry (docs/api.md §7), on its own provider id beside the flat one. */
const METERED = {
  dialect: 'openai',
  routes: ['/v1/chat/completions'],
  min_output: 16,
  models: { 'bench-model': { input: 150, cached_input: 75, output: 600, max_output: 4096 } },
}

/** The pipeline floor's rows (bench/pipeline-floor.ts), by its path's mode. */
const PIPELINE_ROWS = {
  flat: 'pipeline floor (flat)',
  metered: 'pipeline floor (metered)',
  early: 'pipeline floor (metered, settle not awaited)',
} as const

const children: Child[] = []
const running: { services: BenchService[] } = { services: [] }

async function main() {
  const loadBefore = loadAverage()
  const ports = { up: freePort(), pass: freePort(), floor: freePort(), pkNode: freePort(), pkBun: freePort(), svc: freePort(), base: freePort(), pipe: freePort() }
  const up = `http://127.0.0.1:${ports.up}`
  const child = (name: string, cmd: string[], env: Record<string, string> = {}) => {
    const c = startChild(name, cmd, env, join(OUT, `${name}.log`))
    children.push(c)
    return c
  }
  Bun.spawnSync(['mkdir', '-p', OUT])
  const upstream = child('upstream', [BUN, join(ROOT, 'bench', 'proxy-upstream.ts')], { PORT: String(ports.up) })
  const pass = child('passthrough', [BUN, join(ROOT, 'bench', 'passthrough.ts')], { PORT: String(ports.pass), UPSTREAM_URL: up, STREAMING: '1' })
  const floor = child('ledger-floor', [BUN, join(ROOT, 'bench', 'passthrough.ts')], {
    PORT: String(ports.floor),
    UPSTREAM_URL: up,
    STREAMING: '1',
    LEDGER_FLOOR_REDIS_URL: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
  })
  const pkNode = child('portkey-node', [Bun.which('node') ?? 'node', PORTKEY, `--port=${ports.pkNode}`, '--headless'])
  const pkBun = child('portkey-bun', [BUN, PORTKEY, `--port=${ports.pkBun}`, '--headless'])
  for (const [c, port] of [[upstream, ports.up], [pass, ports.pass], [floor, ports.floor], [pkNode, ports.pkNode], [pkBun, ports.pkBun]] as const)
    await waitHttp(`http://127.0.0.1:${port}/`, c)

  const flat = { base_url: up, key_env: 'BENCH_HOUSE_KEY', auth: { header: 'authorization', scheme: 'Bearer' }, proxy: { price: PRICE, paths: ['/v1/'], house: { allow: ['/v1/'] } } }
  const service = await startService({
    port: ports.svc,
    upstreamUrl: up,
    outDir: OUT,
    pglite: false,
    profile: opt.profile,
    catalog: { providers: { openai: flat, llm: { ...flat, proxy: { price: 0, paths: ['/v1/'], metered: METERED } } }, capabilities: [] },
  })
  running.services.push(service)
  const acct = await service.signup()
  await service.fund(acct.accountId)
  // The baseline gets the flat route only, unless its metered row is asked for: a tree from before
  // metering need not know its catalog form.
  let base: { service: BenchService; token: string } | null = null
  if (BASELINE && (WANTED.has('baseline') || WANTED.has('baseline-metered'))) {
    console.log(`starting the baseline service (${BASELINE.root}, ${BASELINE.commit})...`)
    const providers = WANTED.has('baseline-metered') ? { openai: flat, llm: { ...flat, proxy: { price: 0, paths: ['/v1/'], metered: METERED } } } : { openai: flat }
    const b = await startService({ port: ports.base, upstreamUrl: up, outDir: join(OUT, 'baseline'), pglite: false, catalog: { providers, capabilities: [] }, root: BASELINE.root })
    running.services.push(b)
    const a = await b.signup()
    await b.fund(a.accountId)
    base = { service: b, token: a.token }
  }

  // The pipeline floor (bench/pipeline-floor.ts): the paid-request pipeline alone, flat and metered.
  let pipeline: { service: BenchService; token: string } | null = null
  if (WANTED.has('pipeline')) {
    const m = METERED.models['bench-model']
    const p = await startService({
      port: ports.pipe,
      upstreamUrl: up,
      outDir: join(OUT, 'pipeline'),
      pglite: false,
      entry: 'bench/pipeline-floor.ts',
      catalog: { providers: { openai: flat, llm: { ...flat, proxy: { price: 0, paths: ['/v1/'], metered: METERED } } }, capabilities: [] },
      env: { PIPELINE_FLOOR_UPSTREAM: up, PIPELINE_FLOOR_PRICE: String(PRICE), PIPELINE_FLOOR_MODEL: JSON.stringify({ name: 'bench-model', ...m, min_output: METERED.min_output }) },
    })
    running.services.push(p)
    const a = await p.signup()
    await p.fund(a.accountId)
    pipeline = { service: p, token: a.token }
  }

  const portkey = { 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${up}/v1`, authorization: 'Bearer bench-house-key' }
  const pidOf = (c: Child) => () => [c.proc.pid]
  const ours = { authorization: `Bearer ${acct.token}` }
  const targets: Target[] = [
    { key: 'direct', name: 'upstream direct', url: `${up}/v1/chat/completions`, headers: {}, pids: pidOf(upstream) },
    { key: 'passthrough', name: 'bare Bun passthrough', url: `http://127.0.0.1:${ports.pass}/v1/chat/completions`, headers: {}, pids: pidOf(pass) },
    { key: 'floor', name: 'ledger floor', url: `http://127.0.0.1:${ports.floor}/v1/chat/completions`, headers: {}, pids: pidOf(floor) },
    { key: 'proxy', name: 'our proxy', url: `${service.url}/proxy/openai/v1/chat/completions`, headers: ours, pids: pidOf(service.child), svcUrl: service.url },
    ...(base
      ? [{ key: 'baseline', name: baselineName('our proxy', BASELINE!), url: `${base.service.url}/proxy/openai/v1/chat/completions`, headers: { authorization: `Bearer ${base.token}` }, pids: pidOf(base.service.child), svcUrl: base.service.url }]
      : []),
    { key: 'metered', name: 'our proxy (metered)', url: `${service.url}/proxy/llm/v1/chat/completions`, headers: ours, pids: pidOf(service.child), log: join(OUT, 'service.log'), svcUrl: service.url },
    ...(base
      ? [{ key: 'baseline-metered', name: baselineName('our proxy (metered)', BASELINE!), url: `${base.service.url}/proxy/llm/v1/chat/completions`, headers: { authorization: `Bearer ${base.token}` }, pids: pidOf(base.service.child), svcUrl: base.service.url }]
      : []),
    ...(pipeline
      ? (['flat', 'metered', 'early'] as const).map((mode) => ({
          key: 'pipeline',
          name: PIPELINE_ROWS[mode],
          url: `${pipeline!.service.url}/pipeline/${mode}/v1/chat/completions`,
          headers: { authorization: `Bearer ${pipeline!.token}` },
          pids: pidOf(pipeline!.service.child),
          log: join(OUT, 'pipeline', 'service.log'),
          svcUrl: pipeline!.service.url,
        }))
      : []),
    { key: 'portkey-node', name: 'Portkey (Node)', url: `http://127.0.0.1:${ports.pkNode}/v1/chat/completions`, headers: portkey, pids: pidOf(pkNode), log: join(OUT, 'portkey-node.log') },
    { key: 'portkey-bun', name: 'Portkey (Bun)', url: `http://127.0.0.1:${ports.pkBun}/v1/chat/completions`, headers: portkey, pids: pidOf(pkBun), log: join(OUT, 'portkey-bun.log') },
  ].filter((t) => WANTED.has(t.key))

  const rows: Row[] = []
  const unsupported = new Set<string>()
  const skipped = new Set<string>()
  for (let round = 1; round <= ROUNDS; round++)
  for (const workload of (['json', 'sse'] as const).filter((w) => opt.workloads!.split(',').includes(w))) {
    for (const t of round % 2 === 0 ? [...targets].reverse() : targets) {
      const headers = { 'content-type': 'application/json', ...t.headers }
      // A row that could not serve its workload in round 1 is not tried again.
      if (skipped.has(`${workload} ${t.name}`)) continue
      let failed = unsupported.has(t.name) ? 'see the JSON row' : await sanity(t, headers, workload)
      if (failed && t.log && !unsupported.has(t.name)) failed += logError(t.log)
      if (failed) {
        console.log(`${workload} ${t.name}: skipped (${failed})`)
        if (t.key === 'metered') unsupported.add(t.name)
        skipped.add(`${workload} ${t.name}`)
        rows.push({ round, target: t.name, workload, load: null, failed })
        continue
      }
      const o = { url: t.url, connections: CONNECTIONS, body: body(workload === 'sse'), headers }
      if (WARMUP > 0) await runLoad({ ...o, durationS: WARMUP })
      const m = await measureCpu({ server: t.pids, upstream: pidOf(upstream), redis: () => pidsByComm('redis-server'), postgres: () => pidsByComm('postgres') }, () => runLoad({ ...o, durationS: DURATION }))
      if (t.svcUrl) {
        const lag = await ledgerLag(t.svcUrl)
        const d = await drainLedger(t.svcUrl)
        console.log(`${workload} ${t.name}: ledger lag at the end ${lag} entries, drained in ${d.ms} ms (left ${d.lag})`)
      }
      console.log(`round ${round} ${workload} ${t.name}: ${Math.round(m.value.reqPerSec)} req/s, p50 ${m.value.p50} ms, p99 ${m.value.p99} ms, non2xx ${m.value.non2xx}, errors ${m.value.errors}, machine busy ${m.machineBusyPct}%`)
      rows.push({ round, target: t.name, workload, load: m.value, machineBusyPct: m.machineBusyPct, cpu: { ...m.groupPct, irq: m.irqPct } })
    }
  }

  const meteredNotes: string[] = []
  if (targets.some((t) => t.key === 'metered') && !unsupported.has('our proxy (metered)'))
    for (const stream of [false, true]) meteredNotes.push(await meteredSettle(`${service.url}/proxy/llm/v1/chat/completions`, service.url, acct.token, stream))

  const ttfb: Ttfb[] = []
  // `--ttfb 0` skips the time-to-first-byte samples (an A/B of throughput alone).
  // Portkey's rows are sampled on their own, after the others: each of its answers takes ~30 ms
  // and leaves its process busy behind it, which the next target's sample would pay for.
  const sampled = TTFB_N > 0 ? targets.filter((x) => !unsupported.has(x.name)) : []
  const portkeyRow = (t: Target) => t.key.startsWith('portkey')
  const firsts = new Map([...(await firstBytes(sampled.filter((t) => !portkeyRow(t)))), ...(await firstBytes(sampled.filter(portkeyRow)))])
  for (const [t, r] of sampled.map((t) => [t, firsts.get(t)!] as const)) {
    console.log(`ttfb ${t.name}: ${'failed' in r ? r.failed : `cold p50 ${r.p50.toFixed(3)} ms, p99 ${r.p99.toFixed(3)} ms; warm p50 ${r.warmP50.toFixed(3)} ms, p99 ${r.warmP99.toFixed(3)} ms`}`)
    ttfb.push({ target: t.name, ...r })
  }

  const balance = await service.balance(acct.accountId)
  const section = render({ rows, ttfb, loadBefore, loadAfter: loadAverage(), meteredNotes })
  console.log('\n' + section)
  const core = ['direct', 'passthrough', 'floor', 'proxy', 'portkey-node', 'portkey-bun']
  if (!opt['no-write'] && !opt.profile && core.every((k) => WANTED.has(k)) && opt.workloads === 'json,sse') writeSection(section)
  if (opt.profile) console.error(`CPU profile of the service: ${OUT}/ (summarise with: bun bench/profile-summary.ts ${OUT}/<file>.cpuprofile)`)
  return balance
}

/** One request first: a target that cannot serve the workload gets a row that says so, not a number. */
async function sanity(t: Target, headers: Record<string, string>, workload: 'json' | 'sse'): Promise<string | undefined> {
  try {
    const r = await fetch(t.url, { method: 'POST', headers, body: body(workload === 'sse') })
    const text = await r.text()
    if (r.status !== 200) return `HTTP ${r.status}: ${text.slice(0, 120).replace(/\s+/g, ' ')}`
    // A tree without metering takes the catalog entry but charges the flat price: no x-pab-reserved.
    if (t.key === 'metered' && r.headers.get('x-pab-reserved') === null)
      return `the service does not meter this route yet (answered x-pab-charged: ${r.headers.get('x-pab-charged')}, no x-pab-reserved)`
    if (workload === 'sse' && (text.match(/^data: /gm)?.length ?? 0) < SSE_CHUNKS) return `incomplete stream: ${text.slice(0, 120)}`
    if (workload === 'json' && !text.includes('chat.completion')) return `unexpected body: ${text.slice(0, 120)}`
  } catch (e) {
    return String(e)
  }
}

/** The first error line the server logged, for the row that says why it failed. */
function logError(file: string): string {
  try {
    const line = readFileSync(file, 'utf8').split('\n').find((l) => /error/i.test(l) && !/^\s*at /.test(l))
    return line ? `; its log: "${line.trim().slice(0, 120)}"` : ''
  } catch {
    return ''
  }
}

/**
 * Time to the first body byte of the SSE stream, one request at a time, the targets taken in turn
 * (sample i of every target, then sample i + 1, in the reverse order on every other pass): one
 * target's samples all taken in a row would each see one stretch of the machine, and a slow
 * stretch of two cores shared with other work moves a p50 by a millisecond (the recorded run of
 * 2026-11-26: the metered route +0.9 ms over the flat one with its samples taken after the flat
 * one's, +0.01 ms when run again).
 * Each turn times two requests to its target, back to back: the first finds every process of the
 * path idle since the target's previous turn (`cold`: on a VM each wake-up costs ~0.1–0.2 ms, and a
 * proxied request wakes three processes where the direct one wakes one), the second finds them
 * just used (`warm`: what a service with steady traffic sees). Both are reported.
 */
async function firstBytes(ts: Target[]): Promise<Map<Target, FirstBytes | { failed: string }>> {
  const samples = new Map<Target, { cold: number[]; warm: number[] }>(ts.map((t) => [t, { cold: [], warm: [] }]))
  const out = new Map<Target, FirstBytes | { failed: string }>()
  for (let i = 0; i < TTFB_N + 20; i++)
    for (const t of i % 2 ? [...ts].reverse() : ts) {
      if (out.has(t)) continue
      const headers = { 'content-type': 'application/json', ...t.headers }
      const cold = await firstByte(t, headers)
      const warm = typeof cold === 'number' ? await firstByte(t, headers) : cold
      if (typeof cold !== 'number') out.set(t, cold)
      else if (typeof warm !== 'number') out.set(t, warm)
      else if (i >= 20) {
        // the first 20 warm the connection pool and the JIT
        samples.get(t)!.cold.push(cold)
        samples.get(t)!.warm.push(warm)
      }
    }
  const pct = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * q)]!
  for (const t of ts) {
    if (out.has(t)) continue
    const { cold, warm } = samples.get(t)!
    out.set(t, { p50: pct(cold, 0.5), p99: pct(cold, 0.99), warmP50: pct(warm, 0.5), warmP99: pct(warm, 0.99) })
  }
  // In the targets' order, as the table lists them.
  return new Map(ts.map((t) => [t, out.get(t)!]))
}

/** A target's first-byte percentiles, in ms: cold (its first request of a turn) and warm (its second). */
interface FirstBytes {
  p50: number
  p99: number
  warmP50: number
  warmP99: number
}

/** One request's time to its first body byte, in ms. */
async function firstByte(t: Target, headers: Record<string, string>): Promise<number | { failed: string }> {
  const t0 = performance.now()
  const r = await fetch(t.url, { method: 'POST', headers, body: body(true) })
  if (r.status !== 200) return { failed: `HTTP ${r.status}` }
  const reader = r.body!.getReader()
  const first = await reader.read()
  const dt = performance.now() - t0
  if (first.done) return { failed: 'empty body' }
  while (!(await reader.read()).done) {}
  return dt
}

/**
 * What one metered call settled to (GET /v1/activity/{call_id}): that the usage came from the
 * provider's answer, not an estimate, so the metered rows measure the path a real provider takes.
 */
async function meteredSettle(url: string, svcUrl: string, token: string, stream: boolean): Promise<string> {
  const label = stream ? 'SSE' : 'JSON'
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: body(stream) })
  await res.text()
  const id = res.headers.get('x-pab-call-id')
  if (!id) return `metered ${label}: no x-pab-call-id on the answer`
  for (let i = 0; i < 20; i++) {
    const a = await fetch(`${svcUrl}/v1/activity/${id}`, { headers: { authorization: `Bearer ${token}` } })
    const act = (await a.json()) as { usage_source?: string | null; tokens?: unknown; reserved?: number; charged?: number; outcome?: string }
    if (a.status === 200 && act.usage_source) return `metered ${label} call: reserved ${act.reserved}, charged ${act.charged}, tokens ${JSON.stringify(act.tokens)}, usage_source **${act.usage_source}**, outcome ${act.outcome}`
    await Bun.sleep(100)
  }
  return `metered ${label} call ${id}: not settled with a usage_source within 2 s`
}

function render(r: { rows: Row[]; ttfb: Ttfb[]; loadBefore: string; loadAfter: string; meteredNotes: string[] }): string {
  const f0 = (n: number) => Math.round(n).toLocaleString('en-US')
  const measured = (target: string, w: string) => r.rows.filter((x) => x.target === target && x.workload === w && x.load)
  /** The row's median req/s over the rounds (its one value with one round). */
  const rps = (target: string, w: string) => median(measured(target, w).map((x) => x.load!.reqPerSec))
  const ratio = (a: number, b: number) => (Number.isFinite(a / b) ? `${(a / b).toFixed(2)}×` : 'n/a')
  const lines = [
    BEGIN,
    '## Proxy (issue 5)',
    '',
    `Command: \`bun bench/proxy.ts --connections ${CONNECTIONS} --duration ${DURATION} --warmup ${WARMUP}${ROUNDS > 1 ? ` --rounds ${ROUNDS}` : ''} --ttfb ${TTFB_N}${BASELINE ? ` --baseline <checkout of ${BASELINE.commit}>` : ''}\``,
    '',
    `Run at ${new Date().toISOString()} on ${availableParallelism()} cores **shared with other engineers' work** (load average before: ${r.loadBefore}; after: ${r.loadAfter}).`,
    'Every server is its own process on loopback; the client is autocannon on Node, so client, servers, Redis and Postgres compete for the same cores.',
    `Workloads: POST /v1/chat/completions with a small JSON answer, and with \`"stream": true\` a ${SSE_CHUNKS}-chunk SSE stream. "our proxy" is the full path: token, the debit script (governance and a ${PRICE}-credit debit), header policy, streamed relay with cap and key masking, refund/activity filing. "ledger floor" is the streaming passthrough plus the two Redis round trips a Redis-ledger proxy cannot do without (a no-op script awaited before the upstream, one after it), with no checks, no writes and no Postgres (bench/passthrough.ts).`,
    '',
    '"pipeline floor (flat | metered)" is the paid-request pipeline alone (bench/pipeline-floor.ts): one forwarder that reads each answer whole, the same for both, around the service\'s own openPaidCall and settle — flat: debit.lua and the filing (not awaited, as the proxy files it); metered: debit.lua with the reservation and settle.lua with a fixed usage, awaited before the answer, as the proxy settles it — with the in-process flusher writing to Postgres, and no auth per request, no metering of the answer, no header policy and no key masking. Their ratio is what the ledger\'s shape alone leaves the metered route. "(metered, settle not awaited)" sends the settle as the answer goes instead, the shape weighed in docs/decisions.md (issue 14).',
    '',
    '"our proxy (metered)" is the same upstream through a metered route (docs/api.md §7: `proxy.metered`, dialect openai, `bench-model` priced per token): a reservation in the debit script, the usage read from the answer (JSON `usage`, or the final usage chunk the route asks for with `stream_options.include_usage` and hides from the client) and an exact settle. "(baseline …)" is the flat route on the service of the `--baseline` checkout, measured in the same loop.',
    '',
    'CPU columns are % of one core during the measured row (the machine has 2). Redis and Postgres are shared with other work, so theirs include it.',
    '',
    '"whole chain" is every process of the row but the client: server, upstream, Redis, Postgres and kernel irq (loopback networking), per request.',
    '',
    '| Round | Workload | Target | req/s | p50 ms | p99 ms | non-2xx | errors | machine busy | server | upstream | redis | postgres | server µs CPU / req | whole chain µs CPU / req |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const x of r.rows) {
    if (!x.load) lines.push(`| ${x.round} | ${x.workload} | ${x.target} | failed: ${x.failed!.replace(/\|/g, '/')} | | | | | | | | | | | |`)
    else {
      const c = x.cpu ?? {}
      const us = (pct: number) => f0((pct / 100 / Math.max(1, x.load!.reqPerSec)) * 1e6)
      const direct = x.target === 'upstream direct'
      const chain = (direct ? 0 : (c.server ?? 0)) + (c.upstream ?? 0) + (c.redis ?? 0) + (c.postgres ?? 0) + (c.irq ?? 0)
      lines.push(
        `| ${x.round} | ${x.workload} | ${x.target} | ${f0(x.load.reqPerSec)} | ${x.load.p50} | ${x.load.p99} | ${x.load.non2xx} | ${x.load.errors} | ${x.machineBusyPct}% | ${c.server ?? ''} | ${c.upstream ?? ''} | ${c.redis ?? ''} | ${c.postgres ?? ''} | ${direct ? '–' : us(c.server ?? 0)} | ${us(chain)} |`,
      )
    }
  }
  if (ROUNDS > 1) {
    lines.push('', `Medians over the ${ROUNDS} rounds (an even round runs its rows in the reverse order, so that no row always follows the same one):`, '', '| Workload | Target | req/s | p50 ms | p99 ms |', '|---|---|---:|---:|---:|')
    for (const w of ['json', 'sse'] as const)
      for (const name of [...new Set(r.rows.filter((x) => x.workload === w && x.load).map((x) => x.target))]) {
        const xs = measured(name, w).map((x) => x.load!)
        lines.push(`| ${w} | ${name} | ${f0(median(xs.map((x) => x.reqPerSec)))} | ${median(xs.map((x) => x.p50))} | ${median(xs.map((x) => x.p99))} |`)
      }
    // Rows of one round ran seconds apart, so a round's own ratio pairs like with like.
    const perRound = (w: string, num: string, den: string) =>
      Array.from({ length: ROUNDS }, (_, i) => {
        const one = (t: string) => r.rows.find((x) => x.round === i + 1 && x.target === t && x.workload === w)?.load?.reqPerSec ?? NaN
        return ratio(one(num), one(den))
      }).join(', ')
    lines.push('', `Metered / flat in each round: JSON ${perRound('json', 'our proxy (metered)', 'our proxy')}; SSE ${perRound('sse', 'our proxy (metered)', 'our proxy')}.`)
    if (r.rows.some((x) => x.target === PIPELINE_ROWS.flat && x.load))
      lines.push(
        '',
        `Pipeline floor, metered / flat in each round: JSON ${perRound('json', PIPELINE_ROWS.metered, PIPELINE_ROWS.flat)}; SSE ${perRound('sse', PIPELINE_ROWS.metered, PIPELINE_ROWS.flat)}. With the settle not awaited: JSON ${perRound('json', PIPELINE_ROWS.early, PIPELINE_ROWS.flat)}; SSE ${perRound('sse', PIPELINE_ROWS.early, PIPELINE_ROWS.flat)}.`,
      )
  }
  lines.push('', `Ratios (${ROUNDS > 1 ? 'medians over the rounds; ' : ''}the ledger floor is the yardstick: the least any Redis-ledger design costs):`, '')
  const baseName = r.rows.find((x) => x.target.startsWith('our proxy (baseline'))?.target
  const baseMetered = r.rows.find((x) => x.target.startsWith('our proxy (metered) (baseline'))?.target
  const pairs: RatioPair[] = []
  for (const [w, label] of [['json', 'JSON'], ['sse', 'SSE']] as const)
    pairs.push(...overFloor([...new Set(r.rows.map((x) => x.target))].map((name) => ({ name, reqPerSec: rps(name, w) })), 'ledger floor', ` ${label}`))
  for (const [w, label] of [['json', 'JSON'], ['sse', 'SSE']] as const)
    pairs.push(
      { label: `our proxy / Portkey under Bun, ${label}`, num: rps('our proxy', w), den: rps('Portkey (Bun)', w) },
      { label: `metered / flat proxy, ${label}`, num: rps('our proxy (metered)', w), den: rps('our proxy', w), note: Number.isFinite(rps('our proxy (metered)', w)) ? '' : 'row skipped' },
      { label: `current / baseline proxy, ${label}`, num: rps('our proxy', w), den: baseName ? rps(baseName, w) : NaN, note: baseName ? baseName.slice('our proxy '.length) : 'no --baseline' },
      {
        label: `pipeline floor, metered / flat, ${label} (the most the metered route can keep of the flat one with this ledger shape)`,
        num: rps(PIPELINE_ROWS.metered, w),
        den: rps(PIPELINE_ROWS.flat, w),
        note: Number.isFinite(rps(PIPELINE_ROWS.flat, w)) ? '' : 'no pipeline rows',
      },
      {
        label: `pipeline floor, metered with its settle not awaited / flat, ${label}`,
        num: rps(PIPELINE_ROWS.early, w),
        den: rps(PIPELINE_ROWS.flat, w),
        note: Number.isFinite(rps(PIPELINE_ROWS.flat, w)) ? '' : 'no pipeline rows',
      },
      ...(baseMetered ? [{ label: `current / baseline metered proxy, ${label}`, num: rps('our proxy (metered)', w), den: rps(baseMetered, w), note: baseMetered.slice('our proxy (metered) '.length) }] : []),
    )
  lines.push(...ratioTable(pairs))
  if (r.meteredNotes.length) lines.push('', 'One metered call of each workload after the load, as GET /v1/activity/{call_id} files it:', '', ...r.meteredNotes.map((n) => `- ${n}`))
  lines.push('', '| Ratio | JSON | SSE |', '|---|---:|---:|')
  const pk = (w: string) => (Number.isFinite(rps('Portkey (Node)', w)) ? rps('Portkey (Node)', w) : rps('Portkey (Bun)', w))
  lines.push(`| our proxy / bare passthrough (target ≥ 0.90) | ${ratio(rps('our proxy', 'json'), rps('bare Bun passthrough', 'json'))} | ${ratio(rps('our proxy', 'sse'), rps('bare Bun passthrough', 'sse'))} |`)
  lines.push(`| ledger floor / bare passthrough (the most any Redis-ledger proxy can keep) | ${ratio(rps('ledger floor', 'json'), rps('bare Bun passthrough', 'json'))} | ${ratio(rps('ledger floor', 'sse'), rps('bare Bun passthrough', 'sse'))} |`)
  lines.push(`| ledger floor / Portkey (Node where it works, else Bun) | ${ratio(rps('ledger floor', 'json'), pk('json'))} | ${ratio(rps('ledger floor', 'sse'), pk('sse'))} |`)
  lines.push(`| our proxy / Portkey on Node (target ≥ 10) | ${ratio(rps('our proxy', 'json'), rps('Portkey (Node)', 'json'))} | ${ratio(rps('our proxy', 'sse'), rps('Portkey (Node)', 'sse'))} |`)
  lines.push(`| our proxy / Portkey under Bun | ${ratio(rps('our proxy', 'json'), rps('Portkey (Bun)', 'json'))} | ${ratio(rps('our proxy', 'sse'), rps('Portkey (Bun)', 'sse'))} |`)
  lines.push(`| our proxy / Portkey (Node where it works, else Bun) | ${ratio(rps('our proxy', 'json'), pk('json'))} | ${ratio(rps('our proxy', 'sse'), pk('sse'))} |`)
  lines.push(`| our proxy / upstream direct | ${ratio(rps('our proxy', 'json'), rps('upstream direct', 'json'))} | ${ratio(rps('our proxy', 'sse'), rps('upstream direct', 'sse'))} |`)
  lines.push(
    '',
    `Time to first SSE byte, one request at a time (${TTFB_N} turns after 20 warm-up turns, the targets taken in turn; each turn times two requests back to back: **cold**, the first, finds the path's processes idle since the target's last turn; **warm**, the second, finds them just used):`,
    '',
    '| Target | cold p50 ms | cold p99 ms | cold p50 − direct | warm p50 ms | warm p99 ms | warm p50 − direct |',
    '|---|---:|---:|---:|---:|---:|---:|',
  )
  const direct = r.ttfb.find((x) => x.target === 'upstream direct')
  for (const x of r.ttfb)
    lines.push(
      x.failed
        ? `| ${x.target} | failed: ${x.failed} | | | | | |`
        : `| ${x.target} | ${x.p50!.toFixed(3)} | ${x.p99!.toFixed(3)} | ${(x.p50! - (direct?.p50 ?? NaN)).toFixed(3)} | ${x.warmP50!.toFixed(3)} | ${x.warmP99!.toFixed(3)} | ${(x.warmP50! - (direct?.warmP50 ?? NaN)).toFixed(3)} |`,
    )
  const met = (ok: boolean) => (ok ? '**met**' : '**NOT met**')
  const pass = (w: string) => rps('our proxy', w) / rps('bare Bun passthrough', w)
  const vsPk = (w: string) => rps('our proxy', w) / pk(w)
  const pkNodeSse = Number.isFinite(rps('Portkey (Node)', 'sse'))
  /** The target's first byte over the direct upstream's, cold and warm (p50). */
  const over = (target: string) => {
    const x = r.ttfb.find((y) => y.target === target)
    return { cold: (x?.p50 ?? NaN) - (direct?.p50 ?? NaN), warm: (x?.warmP50 ?? NaN) - (direct?.warmP50 ?? NaN) }
  }
  const within = (target: string, label: string) => {
    const o = over(target)
    return `${label}: warm ${met(o.warm <= 1)} (+${o.warm.toFixed(3)} ms), cold ${met(o.cold <= 1)} (+${o.cold.toFixed(3)} ms)`
  }
  lines.push(
    '',
    'Targets of the issue, on this run:',
    '',
    `- Throughput ≥ 90% of the bare passthrough: ${met(pass('json') >= 0.9)} for JSON (${ratio(rps('our proxy', 'json'), rps('bare Bun passthrough', 'json'))}), ${met(pass('sse') >= 0.9)} for SSE (${ratio(rps('our proxy', 'sse'), rps('bare Bun passthrough', 'sse'))}).`,
    `- Throughput ≥ 10× Portkey: ${met(vsPk('json') >= 10)} for JSON against Portkey on Node (${ratio(rps('our proxy', 'json'), pk('json'))}); SSE ${pkNodeSse ? 'against Portkey on Node' : 'against Portkey under Bun, since its streaming path fails on Node (row above)'}: ${met(vsPk('sse') >= 10)} (${ratio(rps('our proxy', 'sse'), pk('sse'))}).`,
    `- Time to first SSE byte within 1 ms of the direct upstream's (p50) — ${within('our proxy', 'the flat proxy')}; ${within('our proxy (metered)', 'the metered route (issue 14)')}.`,
    '',
    'Reading it: per request the proxy does what the bare passthrough does not — the debit and record-call scripts in Redis, and',
    "behind them the flusher's Postgres writes of the ledger entry and the activity row (the redis and postgres columns),",
    'plus token resolution, path checks, header policy and a relayed, cap-counted, key-masked body. Every process of a row',
    'shares the same 2 cores, so the chain\'s CPU per request, not the proxy process alone, bounds throughput; the paid-call',
    'section above runs the same governance chain and lands in the same range. Numbers vary run to run with the other',
    "engineers' load (see the load averages).",
    END,
  )
  return lines.join('\n')
}

function writeSection(section: string): void {
  const header = '# Bench results\n\nEach section is written by its own script; rerun the command it names to refresh it.\n'
  let text = existsSync(RESULTS) ? readFileSync(RESULTS, 'utf8') : header
  const start = text.indexOf(BEGIN)
  const end = text.indexOf(END)
  if (start !== -1 && end > start) text = text.slice(0, start) + section + text.slice(end + END.length)
  else text = text.replace(/\n*$/, '\n\n') + section + '\n'
  writeFileSync(RESULTS, text)
}

try {
  await main()
} finally {
  for (const s of running.services) await s.stop().catch((e: unknown) => console.error('service stop failed', e))
  for (const c of children) await c.stop()
}
