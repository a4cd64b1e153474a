/**
 * The "Scale (issue 7)" section of bench/RESULTS.md, rendered from one run of bench/scale.ts. Only
 * the text between this section's markers is replaced; the other sections are never touched.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import type { EvalshaResult } from './evalsha'
import type { ScaleLedger } from './scale-ledger'
import type { LoadResult } from './load'

export const TITLE = '## Scale (issue 7)'
export const BEGIN = '<!-- scale:begin (written by bench/scale.ts; do not edit by hand) -->'
export const END = '<!-- scale:end -->'

export interface ScaleRow {
  connections: number
  /** upstream direct | paid call | proxy */
  route: string
  /** single Redis | 3-master cluster | – (the upstream alone) */
  backend: string
  load: LoadResult
  machineBusyPct: number
}

export interface ScaleReport {
  command: string
  at: string
  machine: string[]
  loadBefore: string
  loadAfter: string
  durationS: number
  warmupS: number
  rows: ScaleRow[]
  evalsha: { script: string; results: EvalshaResult[] }
  /** The same EVALSHA on a private redis-server per persistence setting. */
  persistence: { setting: string; results: EvalshaResult[] }[]
  ledgers: { backend: string; check: ScaleLedger }[]
}

const f0 = (n: number) => Math.round(n).toLocaleString('en-US')
const f2 = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : '–')

function find(r: ScaleReport, connections: number, route: string, backend: string) {
  return r.rows.find((x) => x.connections === connections && x.route === route && x.backend === backend)?.load
}

export function render(r: ScaleReport): string {
  const L: string[] = [TITLE, '', BEGIN, '']
  L.push(`Command (from the project root): \`${r.command}\``, '')
  L.push(
    `Run at ${r.at}. Each row: ${r.warmupS} s warm-up (discarded), then ${r.durationS} s measured with autocannon at the given number of connections; the same small POST body everywhere. Short runs on a shared machine: read the shape, not the third digit.`,
    '',
  )
  L.push('Machine:', '')
  for (const m of r.machine) L.push(`- ${m}`)
  L.push(`- Load average before the run: ${r.loadBefore}; after: ${r.loadAfter}.`, '')

  const levels = [...new Set(r.rows.map((x) => x.connections))]
  L.push('### Throughput and latency', '')
  L.push('| Connections | Route | Redis | req/s | p50 ms | p99 ms | p99.9 ms | 2xx | non-2xx | errors | machine busy |')
  L.push('|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|')
  for (const x of r.rows)
    L.push(
      `| ${x.connections} | ${x.route} | ${x.backend} | ${f0(x.load.reqPerSec)} | ${x.load.p50} | ${x.load.p99} | ${x.load.p999} | ${f0(x.load.ok)} | ${x.load.non2xx} | ${x.load.errors + x.load.timeouts} | ${x.machineBusyPct}% |`,
    )
  L.push('')
  L.push(
    'Rows: **upstream direct** = the fake upstream (bench/fake-upstream.ts) called without us — the baseline; **paid call** = `POST /v1/call/bench.search` through the whole service (auth, params validation, the debit script, the upstream with the house key, the call record, the flusher writing to Postgres); **proxy** = `POST /proxy/benchsearch/search`, the native passthrough to the same upstream, debited at the same price. **single Redis** = the machine\'s Redis; **3-master cluster** = a Redis Cluster of three `redis-server` processes on the same machine, the service on `REDIS_CLUSTER_NODES`.',
    '',
  )

  L.push('### Ratios', '')
  L.push('| Connections | paid call / direct (single) | paid call / direct (cluster) | proxy / direct (single) | proxy / direct (cluster) | cluster / single (paid call) |')
  L.push('|---:|---:|---:|---:|---:|---:|')
  for (const c of levels) {
    const d = find(r, c, 'upstream direct', '–')?.reqPerSec ?? NaN
    const ps = find(r, c, 'paid call', 'single Redis')?.reqPerSec ?? NaN
    const pc = find(r, c, 'paid call', '3-master cluster')?.reqPerSec ?? NaN
    const xs = find(r, c, 'proxy', 'single Redis')?.reqPerSec ?? NaN
    const xc = find(r, c, 'proxy', '3-master cluster')?.reqPerSec ?? NaN
    L.push(`| ${c} | ${f2(ps / d)} | ${f2(pc / d)} | ${f2(xs / d)} | ${f2(xc / d)} | ${f2(pc / ps)} |`)
  }
  L.push('')

  L.push(`### The debit script alone: redis-benchmark EVALSHA (${r.evalsha.script})`, '')
  L.push(
    'Measured in the same run against the same single Redis: `redis-benchmark -c <clients> -P <pipeline> -r 1000000000 EVALSHA <sha> <N> <keys> <args>` with the exact keys and arguments the service sends for a funded account (a fresh call id per request, so each one really debits and appends its outbox entry). This is the ceiling of one account\'s debits on one Redis: nothing in front of the script.',
    '',
  )
  L.push('| Clients | Pipeline | Requests | req/s | p50 ms | p99 ms | p99.9 ms |', '|---:|---:|---:|---:|---:|---:|---:|')
  for (const e of r.evalsha.results) L.push(`| ${e.clients} | ${e.pipeline} | ${f0(e.requests)} | ${f0(e.reqPerSec)} | ${e.p50} | ${e.p99} | ${e.p999} |`)
  L.push('')
  const ceiling = Math.max(...r.evalsha.results.map((e) => e.reqPerSec))
  const bestPaid = Math.max(...r.rows.filter((x) => x.route === 'paid call' && x.backend === 'single Redis').map((x) => x.load.reqPerSec))
  const bestDirect = Math.max(...r.rows.filter((x) => x.route === 'upstream direct').map((x) => x.load.reqPerSec))
  L.push(
    `- Best paid call (single Redis) / EVALSHA ceiling: **${f2(bestPaid / ceiling)}** (${f0(bestPaid)} vs ${f0(ceiling)} req/s): the share of the debit script's own capacity the whole paid path reaches on this machine.`,
    `- Best paid call / best upstream direct: **${f2(bestPaid / bestDirect)}** (${f0(bestPaid)} vs ${f0(bestDirect)} req/s).`,
    '',
  )

  L.push('### What Redis persistence costs the debit script', '')
  L.push(
    'The same EVALSHA runs on a private `redis-server` per setting, its files on this machine\'s disk (the settings and what each can lose: docs/operations.md).',
    '',
  )
  L.push('| Setting | Pipeline | req/s | p50 ms | p99 ms | p99.9 ms | vs no persistence |', '|---|---:|---:|---:|---:|---:|---:|')
  const none = r.persistence[0]
  for (const p of r.persistence)
    for (const e of p.results) {
      const base = none?.results.find((x) => x.pipeline === e.pipeline)?.reqPerSec ?? NaN
      L.push(`| ${p.setting} | ${e.pipeline} | ${f0(e.reqPerSec)} | ${e.p50} | ${e.p99} | ${e.p999} | ${f2(e.reqPerSec / base)} |`)
    }
  L.push('')

  L.push('### Ledger exactness after the load', '')
  for (const { backend, check: g } of r.ledgers) {
    const kept = g.debits - g.refunds
    L.push(
      `- ${backend}: ${g.exact ? '**exact**' : '**NOT exact**'} — Redis: funded − final balance = ${f0(g.spent)} credits; Postgres after the drain (lag ${g.lag}): ${f0(g.debits)} debits − ${g.refunds} refunds = ${f0(kept)} charged requests × ${g.price} = ${f0(kept * g.price)} credits, entries Σ ${f0(g.entriesSum)}, ${f0(g.callsCharged)} charged call rows; the client saw ${f0(g.clientOk)} 2xx, and ${f0(kept - g.clientOk)} more were charged (upstream answered) after autocannon dropped them in flight at a run's end (at most ${f0(g.maxInFlightDropped)}).`,
    )
  }
  L.push('', 'The bench funds its account by writing the balance field directly (no ledger entry), so the checks start from the funded balance.')
  L.push(
    '',
    'On one 2-core machine the cluster\'s three masters share the same cores as everything else, so the cluster rows measure the cost of cluster routing and the correctness of the money path across masters, not the extra capacity a cluster gives on separate machines (each master serves only the accounts of the shards it owns).',
    '',
    END,
  )
  return L.join('\n')
}

export function writeSection(file: string, section: string): void {
  const header = '# Bench results\n\nEach section is written by its own script; rerun the command it names to refresh it.\n'
  let text = existsSync(file) ? readFileSync(file, 'utf8') : header
  const start = text.indexOf(TITLE)
  const end = text.indexOf(END)
  if (start !== -1 && end !== -1 && end > start) text = text.slice(0, start) + section + text.slice(end + END.length)
  else text = text.replace(/\n*$/, '\n\n') + section + '\n'
  writeFileSync(file, text)
}
