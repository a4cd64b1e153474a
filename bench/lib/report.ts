/**
 * The "Paid call (issue 2)" section of bench/RESULTS.md, rendered from one run. The script
 * replaces only the text between its own markers, so other sections of the file (the proxy
 * bench) are never touched.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import type { EvalshaResult } from './evalsha'
import type { LedgerCheck } from './ledger-check'
import type { LoadResult } from './load'
import { overFloor, ratioTable, type RatioPair } from './ratios'

/** Markers of one section: the zero-latency run, or a run whose upstream answers in `delayMs`. */
const tag = (delayMs: number) => (delayMs > 0 ? `paid-call-delay-${delayMs}` : 'paid-call')
export const beginMarker = (delayMs: number) => `<!-- ${tag(delayMs)}:begin (written by bench/run.ts; do not edit by hand) -->`
export const endMarker = (delayMs: number) => `<!-- ${tag(delayMs)}:end -->`
export const sectionTitle = (delayMs: number) =>
  delayMs > 0 ? `## Paid call (issue 2), upstream answering in ${delayMs} ms` : '## Paid call (issue 2)'

export interface Row {
  round: number
  name: string
  load: LoadResult
  machineBusyPct: number
  cpu: Record<string, number>
  loadAfter: string
}

/** A row the run left out, and why (a feature the service does not have yet). */
export interface Skipped {
  row: string
  reason: string
}

export interface Report {
  command: string
  /** Milliseconds the fake upstream waits before answering (0: instant, the CPU-cost view). */
  upstreamDelayMs: number
  at: string
  machine: string[]
  nproc: number
  background: { loadBefore: string; busyPct: number }
  connections: number
  durationS: number
  warmupS: number
  rows: Row[]
  medians: Record<string, { reqPerSec: number; p50: number; p99: number }>
  ledger: LedgerCheck
  /** The other services' checks (the baseline's), each on its own account and database. */
  otherLedgers?: { label: string; check: LedgerCheck }[]
  skipped?: Skipped[]
  /** redis-benchmark of the debit script alone, per tree (current, baseline). */
  evalsha?: ({ label: string; script: string; result: EvalshaResult } | { label: string; failed: string })[] | null
  /** Short commit of the baseline tree, when one ran. */
  baseline?: string | null
  loadAfter: string
}

export const THROUGHPUT_TARGET = 0.8
/** Other processes using more than this (% of one core) during a row make the run a busy one. */
export const BUSY_OTHERS_PCT = 25
export const P99_TARGET_MS = 10

const f0 = (n: number) => Math.round(n).toLocaleString('en-US')
const f2 = (n: number) => n.toFixed(2)
const met = (ok: boolean) => (ok ? '**met**' : '**NOT met**')

export function verdict(r: Report) {
  const none = { reqPerSec: NaN, p50: NaN, p99: NaN }
  const paid = r.medians['paid call'] ?? none
  const pass = r.medians['passthrough'] ?? none
  const direct = r.medians['upstream direct'] ?? none
  const floor = r.medians['ledger floor'] ?? none
  const paidRows = r.rows.filter((x) => x.name === 'paid call')
  const clean = r.rows.every((x) => x.load.non2xx === 0 && x.load.errors === 0 && x.load.timeouts === 0)
  const ratio = paid.reqPerSec / pass.reqPerSec
  return {
    ratio,
    floorVsPass: floor.reqPerSec / pass.reqPerSec,
    paidVsDirect: paid.reqPerSec / direct.reqPerSec,
    passVsDirect: pass.reqPerSec / direct.reqPerSec,
    throughputMet: clean && ratio >= THROUGHPUT_TARGET,
    p99Met: clean && paidRows.every((x) => x.load.p99 < P99_TARGET_MS),
    clean,
  }
}

/** Whether other work competed with the bench: the "others" CPU of the measured rows. */
function busyLine(r: Report): string {
  const others = r.rows.map((x) => x.cpu.others ?? 0)
  const max = Math.max(...others)
  const range = `${Math.min(...others)}–${max}% of a core`
  const busy = max > BUSY_OTHERS_PCT || r.background.busyPct >= 10
  return busy
    ? `- During the measured rows, processes outside the bench used ${range} (the "others" column): **the machine was busy with other work; every row is depressed by it, and unevenly.**`
    : `- During the measured rows, processes outside the bench used ${range}: the machine was quiet.`
}

export function render(r: Report): string {
  const v = verdict(r)
  const L: string[] = []
  L.push(sectionTitle(r.upstreamDelayMs), '', beginMarker(r.upstreamDelayMs), '')
  if (r.upstreamDelayMs > 0)
    L.push(
      `Every row's upstream waits ${r.upstreamDelayMs} ms before answering, like a real API across a network. Here the rows show what the ledger adds to a realistic call; the zero-latency section above shows its CPU cost.`,
      '',
    )
  L.push(`Command (from the project root; \`npx bun run bench ...\` is the same): \`${r.command}\``, '')
  L.push(
    'Options: `--rounds N` (rows interleaved per round, an even round in the reverse order), `--rows direct,passthrough,floor,paid,bare,depth4,mcp,baseline` (a subset; leaving out a core row does not write this section), `--baseline <dir>` (a checkout of an earlier commit with node_modules, measured as "paid call (baseline <commit>)" in the same rounds), `--no-evalsha`, `--upstream-delay <ms>` (its own section), `--latency` (bench/latency.ts: its own section at a fixed rate).',
    '',
  )
  L.push(`Run at ${r.at}. ${r.connections} connections, ${r.warmupS} s warm-up (discarded) then ${r.durationS} s measured per row, same POST body to every row.`, '')
  L.push('Machine:', '')
  for (const m of r.machine) L.push(`- ${m}`)
  L.push(
    `- Before the run: load average ${r.background.loadBefore}; the machine was ${r.background.busyPct}% busy (of all cores) over a 2 s sample with nothing of the bench running.`,
    busyLine(r),
    `- After the run: load average ${r.loadAfter}.`,
    '',
  )
  L.push('| Round | Row | req/s | p50 ms | p99 ms | 2xx | non-2xx | errors+timeouts |')
  L.push('|---|---|---:|---:|---:|---:|---:|---:|')
  for (const x of r.rows)
    L.push(`| ${x.round} | ${x.name} | ${f0(x.load.reqPerSec)} | ${x.load.p50} | ${x.load.p99} | ${f0(x.load.ok)} | ${x.load.non2xx} | ${x.load.errors + x.load.timeouts} |`)
  L.push('')
  for (const x of r.skipped ?? []) L.push(`- **${x.row}**: skipped — ${x.reason.replace(/\|/g, '/')}`)
  if (r.skipped?.length) L.push('')
  L.push('Where the CPU went during each measured row (% of one core; the machine has ' + r.nproc + ' cores), and what one request cost:', '')
  L.push('| Round | Row | machine busy | client | upstream | hop | redis | postgres | kernel irq | steal | others | µs CPU per request (hop) | µs CPU per request (whole chain, client excluded) | µs Postgres CPU per request (its database\'s backends) | load avg after |')
  L.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|')
  for (const x of r.rows) {
    const c = x.cpu
    const us = (pct: number) => Math.round((pct / 100 / Math.max(1, x.load.reqPerSec)) * 1e6)
    // The client is the load generator, not part of what a deployment runs: its own column only.
    const chain = (c.upstream ?? 0) + (c.hop ?? 0) + (c.redis ?? 0) + (c.postgres ?? 0) + (c.irq ?? 0)
    L.push(
      `| ${x.round} | ${x.name} | ${x.machineBusyPct}% | ${x.load.clientCpuPct} | ${c.upstream ?? '–'} | ${c.hop ?? '–'} | ${c.redis ?? '–'} | ${c.postgres ?? '–'} | ${c.irq ?? '–'} | ${c.steal ?? '–'} | ${c.others ?? '–'} | ` +
        `${c.hop === undefined ? '–' : us(c.hop)} | ${us(chain)} | ${c.pgOwn === undefined ? '–' : ((c.pgOwn / 100 / Math.max(1, x.load.reqPerSec)) * 1e6).toFixed(1)} | ${x.loadAfter} |`,
    )
  }
  L.push('')
  if (r.rows.some((x) => x.round > 1)) {
    L.push('Medians over the rounds:', '', '| Row | req/s | p50 ms | p99 ms |', '|---|---:|---:|---:|')
    for (const [name, m] of Object.entries(r.medians)) L.push(`| ${name} | ${f0(m.reqPerSec)} | ${m.p50} | ${m.p99} |`)
    L.push('')
  }
  L.push('Rows: **upstream direct** = the fake upstream (bench/fake-upstream.ts) alone; **passthrough** = a bare Bun `fetch` forwarder in front of it (bench/passthrough.ts), no ledger; **ledger floor** = the same forwarder plus the two Redis round trips any Redis-ledger design needs per paid request at the least (a no-op script awaited before the upstream, one after it, auto-pipelined EVALSHA through ioredis as the service sends them), with no checks, no writes and no Postgres; **paid call** = `POST /v1/call/bench.search` with the owner bearer through the whole service (auth, params validation, debit.lua, upstream with the house key, record-calls.lua, the flusher writing to Postgres). "hop" is the passthrough or the service process; "kernel irq" is interrupt and softirq time (loopback networking, charged to no process); "steal" is time the hypervisor gave to other guests; "others" is the rest of the machine\'s busy time (other engineers\' work, this bench\'s orchestrator). Redis and Postgres are shared, so their columns include others\' use too; "its database\'s backends" is the Postgres CPU of the service\'s own connections alone (the flusher\'s writes), by the database their command line names.', '')
  L.push(
    'Reading it: every process of a row shares the same cores, so a row\'s throughput is bounded by the CPU its whole chain spends per request (last CPU column), not by the hop alone. ' +
      `At a fixed ${r.connections} connections the mean latency is about connections / throughput (Little\'s law), so the p99 target moves with the throughput one.`,
    '',
  )
  const rowsNote = [
    r.rows.some((x) => x.name === 'paid call (ledger work alone)') &&
      '**paid call (ledger work alone)** = the same paid call on its own instance of the service\'s services (the same scripts, batching and in-process flusher) with no HTTP API around it (bench/ledger-work.ts: no Elysia routing or hooks, the bearer resolved once per token, no edge checks, no request log, no metrics): what trimming the API surface alone could reach',
    r.rows.some((x) => x.name === 'paid call (depth-4 agent)') &&
      '**paid call (depth-4 agent)** = the same call with the token of an agent four levels down (each level made by its parent with its own ak_ token, budgets far beyond the run), so every debit checks the agent and its ancestors',
    r.rows.some((x) => x.name.startsWith('paid call (MCP')) &&
      '**paid call (MCP …)** = the same capability through `POST /mcp`, a JSON-RPC `tools/call` of `call_capability {slug, params}` over the Streamable HTTP transport (stateless, or one session when the server asks for `initialize`)',
    r.baseline && `**… (baseline ${r.baseline})** = the same row against the service of the baseline checkout, started beside ours and measured in the same rounds`,
  ].filter(Boolean)
  if (rowsNote.length) L.push(`Further rows: ${rowsNote.join('; ')}.`, '')
  for (const e of r.evalsha ?? []) {
    if ('failed' in e) {
      L.push(`- Debit script alone (redis-benchmark, ${e.label} tree): failed — ${e.failed}`)
      continue
    }
    const x = e.result
    const paid = e.label === 'current' ? r.medians['paid call'] : r.medians[Object.keys(r.medians).find((k) => k.includes(`(${e.label})`)) ?? '']
    const share = paid ? ` — the paid call (median ${f0(paid.reqPerSec)} req/s) runs at **${((paid.reqPerSec / x.reqPerSec) * 100).toFixed(1)}%** of its own script's ceiling` : ''
    L.push(
      `- Debit script alone (${e.label} tree): \`redis-benchmark\` EVALSHA ${e.script}, ${x.clients} clients, pipeline ${x.pipeline}, ${f0(x.requests)} requests: **${f0(x.reqPerSec)} req/s**, p50 ${x.p50} ms, p99 ${x.p99} ms${share}`,
    )
  }
  if (r.evalsha?.length) L.push('')
  L.push('Ratios (medians over the rounds; the ledger floor is the yardstick: the least any Redis-ledger design costs):', '')
  const med = (name: string | undefined) => (name ? (r.medians[name]?.reqPerSec ?? NaN) : NaN)
  const names = Object.keys(r.medians)
  const mcpName = names.find((n) => n.startsWith('paid call (MCP'))
  const baseName = names.find((n) => n.startsWith('paid call (baseline'))
  const pairs: RatioPair[] = [
    ...overFloor(names.map((name) => ({ name, reqPerSec: med(name) })), 'ledger floor'),
    { label: 'paid call / passthrough', num: med('paid call'), den: med('passthrough'), note: `issue 2 target ≥ ${f2(THROUGHPUT_TARGET)}` },
    { label: 'paid call / its ledger work alone', num: med('paid call'), den: med('paid call (ledger work alone)'), note: names.includes('paid call (ledger work alone)') ? 'what the HTTP API around the ledger keeps' : 'row skipped' },
    { label: 'depth-4 agent / owner token', num: med('paid call (depth-4 agent)'), den: med('paid call'), note: names.includes('paid call (depth-4 agent)') ? '' : 'row skipped' },
    { label: 'MCP / REST', num: med(mcpName), den: med('paid call'), note: mcpName ? '' : 'row skipped' },
    { label: 'current / baseline', num: med('paid call'), den: med(baseName), note: baseName ? baseName.slice('paid call '.length) : 'no --baseline' },
  ]
  L.push(...ratioTable(pairs), '')
  L.push('Ratios and targets:', '')
  L.push(`- paid call / passthrough throughput: **${f2(v.ratio)}** (target ≥ ${f2(THROUGHPUT_TARGET)}): ${met(v.throughputMet)}`)
  if (Number.isFinite(v.floorVsPass))
    L.push(
      `- ledger floor / passthrough: **${f2(v.floorVsPass)}**: the most a ledger kept in Redis can keep on this machine, before it checks or writes anything${v.floorVsPass < THROUGHPUT_TARGET ? ' — already under the target' : ''}`,
    )
  if (r.upstreamDelayMs > 0) {
    // With a slow upstream the p99 target cannot apply as written (the upstream alone takes longer);
    // what the ledger adds on top of the bare passthrough is the figure that matters here.
    const paid = r.medians['paid call']
    const pass = r.medians['passthrough']
    if (paid && pass)
      L.push(`- latency the ledger adds over the bare passthrough (medians): p50 **+${paid.p50 - pass.p50} ms**, p99 **+${paid.p99 - pass.p99} ms**`)
  } else
    L.push(`- paid call p99 at ${r.connections} connections: **${r.rows.filter((x) => x.name === 'paid call').map((x) => `${x.load.p99} ms`).join(', ')}** (target < ${P99_TARGET_MS} ms): ${met(v.p99Met)}`)
  L.push(`- passthrough / upstream direct: ${f2(v.passVsDirect)}; paid call / upstream direct: ${f2(v.paidVsDirect)}`)
  if (!v.clean) L.push('- some rows had non-2xx answers or errors: the targets are not met on such a run')
  L.push('')
  const ledgers = [{ label: 'current', check: r.ledger }, ...(r.otherLedgers ?? [])]
  L.push(`Ledger exactness after the run: ${ledgers.every((l) => l.check.exact) ? '**exact**' : '**NOT exact**'}`, '')
  for (const { label, check } of ledgers) {
    if (ledgers.length > 1) L.push(`Service (${label}): ${check.exact ? '**exact**' : '**NOT exact**'}`, '')
    L.push(...ledgerLines(check), '')
  }
  L.push('The funding is a direct write of the balance field (bench setup only, no ledger entry), so the check starts from the funded balance.', '', endMarker(r.upstreamDelayMs))
  return L.join('\n')
}

/** Replaces this bench's section in RESULTS.md (or appends it); every other byte is kept. */
export function writeSection(file: string, section: string, delayMs = 0): void {
  const header = '# Bench results\n\nEach section is written by its own script; rerun the command it names to refresh it.\n'
  let text = existsSync(file) ? readFileSync(file, 'utf8') : header
  const end = text.indexOf(endMarker(delayMs))
  const start = end === -1 ? -1 : text.lastIndexOf(sectionTitle(delayMs), end)
  if (start !== -1 && end > start) text = text.slice(0, start) + section + text.slice(end + endMarker(delayMs).length)
  else text = text.replace(/\n*$/, '\n\n') + section + '\n'
  writeFileSync(file, text)
}

function ledgerLines(g: LedgerCheck): string[] {
  const L = [
    `- Redis: funded balance ${f0(g.funded)} − final balance ${f0(g.final)} = ${f0(g.spent)} credits = price ${g.price} × (${f0(g.serverOk)} successful calls counted by the service + ${f0(g.otherCharged)} charged calls whose client went away, at most ${g.maxInFlightDropped}): ${g.redisExact ? 'yes' : '**NO**'}`,
    `- Client: autocannon saw ${f0(g.clientOk)} 2xx on the paid routes (warm-ups and sanity calls included); the service charged ${f0(g.serverOk + g.otherCharged - g.clientOk)} more, within the ≤ ${g.maxInFlightDropped} requests autocannon drops in flight when a run's clock stops: ${g.clientConsistent ? 'consistent' : '**inconsistent**'}`,
  ]
  if (g.pg)
    L.push(
      `- Postgres after the flusher drained (lag ${g.pg.lagEntries}): ${f0(g.pg.debits)} debit and ${g.pg.refunds} refund entries summing to ${f0(g.pg.sum)} credits, ${f0(g.pg.callsOk)} \`ok\` and ${f0(g.pg.callsOtherCharged)} other charged (client_closed, provider_4xx) call rows: ${g.pg.exact ? 'match Redis' : '**do NOT match Redis**'}`,
    )
  else L.push('- Postgres: not checked (PGlite is private to the service process, or the flusher was off)')
  return L
}
