/**
 * Redis CPU per flat paid call (issue 42), from Redis' own accounting: `INFO commandstats` of a
 * private redis-server that only the measured service (and its in-process flusher) talks to.
 * One sample: 80 accounts signed up, one paid call each as warm-up (charged, drained, then
 * `CONFIG RESETSTAT`), then exactly 1,600 flat paid calls (16 in flight, spread over the accounts,
 * the service's own batching), then wait until the flusher has moved every outbox entry into
 * Postgres; µs of Redis per paid call = Σ usec of the commands the service sent / the load's 2xx.
 *
 *   ./node_modules/.bin/bun bench/redis-cpu.ts [--baseline <checkout>] [--rounds 3] [--calls 1600]
 *       [--accounts 80] [--in-flight 16] [--monitor] [--nice] [--callgrind [--stretch 150]]
 *
 * Commands a script runs (`redis.call`) show in commandstats under their own names too, and their
 * usec is already inside the script's EVALSHA: they are listed as "in scripts" and not summed. A name
 * counts as such when the tree's lua/ calls it; `--monitor` checks that split (MONITOR marks script
 * commands `lua`) and prints who sent what — its own cost lands inside EVALSHA, so its usec are not
 * a measurement. With --baseline <dir> (a checkout of an earlier commit with node_modules) that
 * tree's service runs on its own redis-server and Postgres database, alternating with ours round by
 * round. commandstats usec is wall time inside each command, so a busy machine inflates it; the
 * table also gives the redis-server main thread's CPU time over the window (/proc/<pid>/schedstat)
 * and the least disturbed sample; `--nice` renices each private redis-server to -10 (root) so that
 * other work preempts it less. Each sample ends with a ledger check: Σ balances + price × charged
 * calls = Σ granted, and Postgres holds one debit entry and one `ok` call row per charged call.
 * Prints only (markdown); bench/RESULTS.md is left alone.
 *
 * `--callgrind` (rounds default 1): instructions instead of time, which the machine's load does not
 * move. Each private redis-server runs under valgrind's callgrind (bench/lib/callgrind-redis.ts),
 * counted from the load's first call until Postgres holds every row and every outbox is empty:
 * scripts, the flusher's reads and acks, reading requests and writing replies, the event loop. A
 * callgrind dump on entering and on leaving each EVALSHA splits the count by script; the drain
 * check's own INFO and XLEN are left out. Valgrind slows the server ~100×, so the service's periodic
 * clocks are stretched (`--stretch`, see `stretched`) to keep the flusher's rounds per paid call
 * near the native run's (~1.25 per 100 calls); they still follow the machine's load, so the table
 * also gives the count less the flusher's reads and acks. `--calls 400`: a sample takes 1–4 minutes
 * with the machine's load, and two runs agree within ~1% (800: the same figures).
 *
 * Needs redis-server on the PATH and Postgres at BENCH_PG_URL (default
 * postgres://postgres@127.0.0.1:5432/postgres; a fresh database per sample, dropped afterwards).
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import postgres from 'postgres'
import Redis from 'ioredis'
import { SHARDS } from '../src/redis/keys'
import { startRedisServer, type RedisServer } from '../test/helpers/redis-server'
import { resolveBaseline } from './lib/baseline'
import { luaCommands, startCallgrindRedis, type CallgrindWindow } from './lib/callgrind-redis'
import { freePort, startChild, waitHttp, type Child } from './lib/proc'
import { median } from './lib/ratios'
import { BENCH_PRICE, BENCH_SLUG, ROOT, startService, type BenchService } from './lib/service'

const { values: opt } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    baseline: { type: 'string' },
    /** Default 3; 1 with --callgrind (an instruction count needs no median). */
    rounds: { type: 'string' },
    calls: { type: 'string', default: '1600' },
    accounts: { type: 'string', default: '80' },
    'in-flight': { type: 'string', default: '16' },
    /** Diagnosis: a MONITOR connection sorts every command into sent-by-the-service and run-by-a-script. */
    monitor: { type: 'boolean', default: false },
    /** Renice each private redis-server to -10: less preemption inside a script on a busy machine. */
    nice: { type: 'boolean', default: false },
    /** Count instructions instead: each private redis-server runs under valgrind's callgrind. */
    callgrind: { type: 'boolean', default: false },
    /**
     * --callgrind: the service's periodic work (the flusher's idle wait, the ledger check, the stale
     * reclaim) runs this many times slower, as the load does under valgrind, so that it costs about
     * as much per paid call as at native speed (the table shows the flusher's rounds per paid call).
     */
    stretch: { type: 'string', default: '150' },
    /** Accepted for symmetry with the other benches: this one never writes bench/RESULTS.md. */
    'no-write': { type: 'boolean', default: true },
  },
})
const ROUNDS = Number(opt.rounds ?? (opt.callgrind ? 1 : 3))
const STRETCH = Number(opt.stretch)
const CALLS = Number(opt.calls)
const ACCOUNTS = Number(opt.accounts)
const IN_FLIGHT = Number(opt['in-flight'])
const BUN = join(ROOT, 'node_modules', '.bin', 'bun')
const OUT = join(ROOT, 'bench', '.out', `redis-cpu-${Date.now()}`)
const BODY = JSON.stringify({ q: 'bench query' })
const baseline = resolveBaseline(opt.baseline)

/** The commands a script may be: everything they run inside is part of their usec. */
const SCRIPT_COMMANDS = new Set(['evalsha', 'eval', 'evalsha_ro', 'eval_ro', 'fcall', 'fcall_ro'])
/** Commandstats names a subcommand `container|sub`. */
const CONTAINERS = new Set(['xinfo', 'xgroup', 'config', 'client', 'script', 'object', 'memory', 'cluster', 'command', 'function', 'acl', 'latency', 'slowlog'])

type Kind = 'scripts' | 'write-behind' | 'others' | 'in scripts'
interface Stat {
  calls: number
  usec: number
}
interface Sample {
  tree: string
  ok: number
  statuses: Record<number, number>
  loadMs: number
  drainMs: number
  /** The redis-server main thread's CPU time over the window (commands, their I/O and parsing, the event loop), µs. */
  serverCpuUs: number
  stats: Record<string, Stat>
  kinds: Record<string, Kind>
  /** --monitor: per command, calls sent by the service and calls run by a script. */
  monitor: Record<string, { sent: number; lua: number }> | null
  /** --monitor: per script (SHA, the kind of its first key), its calls and KEYS sent. */
  monitorScripts: Record<string, { calls: number; keys: number }> | null
  ledger: { granted: number; balances: number; charged: number; debits: number; callsOk: number; grants: number; exact: boolean }
  /** --callgrind: the window's instructions, split by script and outside scripts. */
  callgrind: CallgrindWindow | null
}

/** The command names a tree's scripts run (`redis.call('HSET', ...)`, `redis.call('XINFO', 'GROUPS', ...)`). */
function scriptCommands(root: string): Set<string> {
  const names = new Set<string>()
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name))
      else if (e.name.endsWith('.lua'))
        for (const m of readFileSync(join(dir, e.name), 'utf8').matchAll(/redis\.p?call\(\s*'([A-Za-z_]+)'(?:\s*,\s*'([A-Za-z_]+)')?/g)) names.add(commandName(m[1]!, m[2]))
    }
  }
  walk(join(root, 'lua'))
  return names
}

function commandName(cmd: string, sub?: string): string {
  const c = cmd.toLowerCase()
  return CONTAINERS.has(c) && sub ? `${c}|${sub.toLowerCase()}` : c
}

function kindOf(name: string, inScripts: Set<string>): Kind {
  if (SCRIPT_COMMANDS.has(name)) return 'scripts'
  if (inScripts.has(name)) return 'in scripts'
  return /^x[a-z]/.test(name) ? 'write-behind' : 'others'
}

function parseCommandstats(info: string): Record<string, Stat> {
  const out: Record<string, Stat> = {}
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) out[m[1]!] = { calls: Number(m[2]), usec: Number(m[3]) }
  return out
}

/** One account per e-mail address (a second signup of an address answers 409). */
async function signup(svc: BenchService, i: number): Promise<{ accountId: string; token: string }> {
  const res = await fetch(`${svc.url}/v1/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: `bench-${svc.prefix}-${i}@example.com`, origin: 'bench' }),
  })
  const body = (await res.json()) as { account_id: string; token: string }
  if (res.status !== 201) throw new Error(`signup answered ${res.status}: ${JSON.stringify(body)}`)
  return { accountId: body.account_id, token: body.token }
}

/** `n` paid calls, `inFlight` at a time, call i on account i mod accounts. */
async function paidCalls(url: string, tokens: string[], n: number, inFlight: number) {
  let next = 0
  let ok = 0
  const statuses: Record<number, number> = {}
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      for (let i = next++; i < n; i = next++) {
        const res = await fetch(`${url}/v1/call/${BENCH_SLUG}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${tokens[i % tokens.length]}` },
          body: BODY,
        })
        await res.arrayBuffer()
        statuses[res.status] = (statuses[res.status] ?? 0) + 1
        if (res.status >= 200 && res.status < 300) ok++
      }
    }),
  )
  return { ok, statuses, ms: performance.now() - t0 }
}

/** Waits until Postgres holds `charged` debit entries and call rows (the flusher's commits). */
async function waitRows(sql: postgres.Sql, charged: number, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs
  for (;;) {
    const [r] = await sql<{ d: string; c: string }[]>`
      select (select count(*) from ledger_entries where kind = 'debit') as d, (select count(*) from calls) as c`
    if (Number(r!.d) >= charged && Number(r!.c) >= charged) return
    if (Date.now() > until) throw new Error(`the flusher did not drain: ${r!.d} debit entries and ${r!.c} call rows of ${charged}`)
    await Bun.sleep(20)
  }
}

async function outboxLength(svc: BenchService): Promise<number> {
  const lens = await Promise.all(Array.from({ length: SHARDS }, (_, s) => svc.redis.xlen(svc.keys.outbox(s))))
  return lens.reduce((a, b) => a + b, 0)
}

/** CPU time the redis-server's main thread has run, µs (/proc/<pid>/schedstat: not inflated by waiting for a core). */
function redisCpuUs(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1000
}

/**
 * The window's commandstats once the flusher is done: Postgres holds every row, then a snapshot,
 * then the outbox is checked empty (XLEN, after the snapshot so it is not in it) and a second
 * snapshot shows no script ran in between — so the acks and trims were all in the first one.
 * `cpuUs`: the server's CPU time read right after the first snapshot. A snapshot taken after an
 * earlier try holds that try's INFO and XLEN: they are the bench's, taken out (`own`).
 */
async function drainedStats(svc: BenchService, sql: postgres.Sql, charged: number, pid: number, timeoutMs = 60_000): Promise<{ stats: Record<string, Stat>; cpuUs: number }> {
  await waitRows(sql, charged, timeoutMs)
  const until = Date.now() + timeoutMs
  const own: Record<string, number> = { 'config|resetstat': 1 }
  for (;;) {
    const first = parseCommandstats(await svc.redis.info('commandstats'))
    const cpuUs = redisCpuUs(pid)
    const empty = (await outboxLength(svc)) === 0
    const second = parseCommandstats(await svc.redis.info('commandstats'))
    const scripts = (s: Record<string, Stat>) => [...SCRIPT_COMMANDS].reduce((a, n) => a + (s[n]?.calls ?? 0), 0)
    if (empty && scripts(first) === scripts(second)) return { stats: withoutOwn(first, own), cpuUs }
    own.info = (own.info ?? 0) + 2
    own.xlen = (own.xlen ?? 0) + SHARDS
    if (Date.now() > until) throw new Error('the outbox did not empty')
    await Bun.sleep(20)
  }
}

/** Takes the bench's own calls out; a name the service sent too keeps its share of the usec. */
function withoutOwn(stats: Record<string, Stat>, own: Record<string, number>): Record<string, Stat> {
  const out: Record<string, Stat> = {}
  for (const [name, s] of Object.entries(stats)) {
    const calls = s.calls - (own[name] ?? 0)
    if (calls > 0) out[name] = { calls, usec: Math.round((s.usec * calls) / s.calls) }
  }
  return out
}

/** `ours`: the bench's own connection (its INFO and XLEN of the drain check), left out. */
async function monitorOn(url: string, ours: string) {
  const counts: Record<string, { sent: number; lua: number }> = {}
  const scripts: Record<string, { calls: number; keys: number }> = {}
  const base = new Redis(url)
  const m = await base.monitor()
  m.on('monitor', (_time: string, args: string[], source: string) => {
    if (source.endsWith(ours)) return
    const name = commandName(args[0]!, args[1])
    const c = (counts[name] ??= { sent: 0, lua: 0 })
    if (source === 'lua') c.lua++
    else c.sent++
    // Which script: its SHA and the kind of its first key (`acct`, `outbox`, ...), and its KEYS (a batch's size).
    if (name === 'evalsha' || name === 'eval') {
      const kind = /^[^:]+:\{s:\d+\}:([a-z_-]+)/.exec(args[3] ?? '')?.[1] ?? '?'
      const s = (scripts[`${name} ${name === 'evalsha' ? args[1]!.slice(0, 8) : ''} (first key: ${kind})`] ??= { calls: 0, keys: 0 })
      s.calls++
      s.keys += Number(args[2])
    }
  })
  return {
    counts,
    scripts,
    stop: () => {
      m.disconnect()
      base.disconnect()
    },
  }
}

/**
 * --callgrind: the service's clocks that drive Redis work by wall time, stretched (× --stretch) so
 * that the periodic work per paid call stays about what it is at native speed while valgrind slows
 * the load ~20-50×: the flusher's wait between rounds (its rounds, so its batch sizes), the ledger
 * check, the reclaim of stale outbox entries; the event poll (Postgres) alike. Nothing else needs
 * raising: ioredis has no command timeout here, the abandon deadline of a call is the capability's
 * timeout plus a minute (no call waits that long on this load, and an abandoned call would break the
 * ledger check), and the health checks' 1 s limits only shape /status, which the window never asks.
 * A tree whose config lacks one of these ignores it.
 */
const stretched = () => ({
  FLUSH_INTERVAL_MS: String(50 * STRETCH),
  LEDGER_CHECK_MS: String(5_000 * STRETCH),
  FLUSH_STALE_MS: String(30_000 * STRETCH),
  EVENT_POLL_MS: String(1_000 * STRETCH),
})

/** The paid call's scripts: a script run whose commands fit several scripts is named after these first. */
const PAID_PATH = ['debit.lua', 'record-calls.lua', 'ack-outbox.lua']

async function sample(tree: { name: string; root: string }, upstreamUrl: string, round: number): Promise<Sample> {
  const counted = opt.callgrind ? await startCallgrindRedis() : null
  const redisServer: Pick<RedisServer, 'url' | 'stop'> = counted ? { url: counted.url, stop: () => counted.stop() } : await startRedisServer()
  let svc: BenchService | null = null
  try {
    svc = await startService({
      port: freePort(),
      upstreamUrl,
      outDir: join(OUT, `${tree.name.replace(/\W+/g, '-')}-${round}`),
      pglite: false,
      root: tree.root,
      redisUrl: redisServer.url,
      env: counted ? stretched() : undefined,
    })
    const sql = postgres(svc.dbUrl!, { max: 1, onnotice: () => {} })
    try {
      const accounts: { accountId: string; token: string; granted: number }[] = []
      for (let i = 0; i < ACCOUNTS; i++) {
        const a = await signup(svc, i)
        accounts.push({ ...a, granted: await svc.balance(a.accountId) })
      }
      const tokens = accounts.map((a) => a.token)
      // Warm-up: one call per account (scripts loaded, per-account state made), charged and drained, not counted.
      const warm = await paidCalls(svc.url, tokens, ACCOUNTS, IN_FLIGHT)
      const pid = Number(/process_id:(\d+)/.exec(await svc.redis.info('server'))![1])
      if (opt.nice) Bun.spawnSync(['renice', '-n', '-10', '-p', String(pid)])
      await drainedStats(svc, sql, warm.ok, pid)
      const mon = opt.monitor ? await monitorOn(redisServer.url, `:${(svc.redis as Redis).stream.localPort}`) : null
      await svc.redis.config('RESETSTAT')
      counted?.zero()
      const cpu0 = redisCpuUs(pid)
      const load = await paidCalls(svc.url, tokens, CALLS, IN_FLIGHT)
      const t0 = performance.now()
      const { stats: raw, cpuUs } = await drainedStats(svc, sql, warm.ok + load.ok, pid, counted ? 600_000 : 60_000)
      const drainMs = performance.now() - t0
      const callgrind = counted?.collect(luaCommands(tree.root), PAID_PATH) ?? null
      mon?.stop()
      const inScripts = scriptCommands(tree.root)
      const stats: Record<string, Stat> = {}
      const kinds: Record<string, Kind> = {}
      for (const [name, s] of Object.entries(raw)) {
        stats[name] = s
        kinds[name] = kindOf(name, inScripts)
      }

      // The ledger: Redis balances against the grants and the charges, Postgres against the charges.
      let balances = 0
      for (const a of accounts) balances += await svc.balance(a.accountId)
      const granted = accounts.reduce((x, a) => x + a.granted, 0)
      const charged = warm.ok + load.ok
      const [pg] = await sql<{ debits: string; grants: string; ok: string }[]>`
        select (select count(*) from ledger_entries where kind = 'debit') as debits,
               (select coalesce(sum(amount), 0) from ledger_entries where kind = 'grant') as grants,
               (select count(*) from calls where outcome = 'ok') as ok`
      const ledger = {
        granted,
        balances,
        charged,
        debits: Number(pg!.debits),
        callsOk: Number(pg!.ok),
        grants: Number(pg!.grants),
        exact: false,
      }
      ledger.exact = balances + BENCH_PRICE * charged === granted && ledger.debits === charged && ledger.callsOk === charged && ledger.grants === granted
      return { tree: tree.name, ok: load.ok, statuses: load.statuses, loadMs: load.ms, drainMs, serverCpuUs: cpuUs - cpu0, stats, kinds, monitor: mon?.counts ?? null, monitorScripts: mon?.scripts ?? null, ledger, callgrind }
    } finally {
      await sql.end()
    }
  } finally {
    await svc?.stop().catch((e) => console.error('cleanup:', e))
    await redisServer.stop()
  }
}

const total = (s: Sample, k?: Kind) =>
  Object.entries(s.stats).reduce((a, [n, st]) => a + (s.kinds[n] !== 'in scripts' && (!k || s.kinds[n] === k) ? st.usec : 0), 0)
const perCall = (s: Sample, k?: Kind) => total(s, k) / s.ok
const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a')
const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a')

function render(samples: Sample[], trees: string[]): string {
  const L: string[] = []
  L.push(`${CALLS} flat paid calls (${BENCH_SLUG}, price ${BENCH_PRICE}) over ${ACCOUNTS} accounts, ${IN_FLIGHT} in flight, after one warm-up call per account; ${ROUNDS} rounds, medians; each sample on its own redis-server and Postgres database.`)
  L.push('')
  L.push('| tree | 2xx (median) | Redis µs / paid call (commandstats) | min | scripts | write-behind | others | commands sent / paid call | redis-server CPU µs / paid call | ledger exact |')
  L.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---|')
  const med = (t: string, f: (s: Sample) => number) => median(samples.filter((s) => s.tree === t).map(f))
  for (const t of trees) {
    const mine = samples.filter((s) => s.tree === t)
    const cmds = (s: Sample) => Object.entries(s.stats).reduce((a, [n, st]) => a + (s.kinds[n] !== 'in scripts' ? st.calls : 0), 0) / s.ok
    L.push(
      `| ${t} | ${med(t, (s) => s.ok)} | **${f1(med(t, (s) => perCall(s)))}** | ${f1(Math.min(...mine.map((s) => perCall(s))))} | ${f1(med(t, (s) => perCall(s, 'scripts')))} | ${f1(med(t, (s) => perCall(s, 'write-behind')))} | ${f1(med(t, (s) => perCall(s, 'others')))} | ${f2(med(t, cmds))} | ${f1(med(t, (s) => s.serverCpuUs / s.ok))} | ${mine.every((s) => s.ledger.exact) ? `yes (${mine.length}/${mine.length})` : `**no** (${mine.filter((s) => s.ledger.exact).length}/${mine.length})`} |`,
    )
  }
  if (trees.length === 2) L.push('', `Ratio ${trees[0]} / ${trees[1]} (Redis µs per paid call, medians): ${f2(med(trees[0]!, (s) => perCall(s)) / med(trees[1]!, (s) => perCall(s)))}×`)
  L.push('', 'Every sample, in the order run (µs of Redis per paid call, commandstats / redis-server CPU; the load\'s wall time):', '')
  L.push(samples.map((s) => `${s.tree.split(' ')[0]} ${f1(perCall(s))} / ${f1(s.serverCpuUs / s.ok)} (${Math.round(s.loadMs)} ms)`).join(' · '))
  L.push('', 'Per command (medians over the rounds; per paid call that answered 2xx):', '')
  const names = [...new Set(samples.flatMap((s) => Object.keys(s.stats)))]
  const kindIn = (n: string) => [...new Set(samples.filter((s) => s.stats[n]).map((s) => s.kinds[n]))].join(', ')
  const order: Kind[] = ['scripts', 'write-behind', 'others', 'in scripts']
  names.sort((a, b) => order.indexOf(samples.find((s) => s.stats[a])!.kinds[a]!) - order.indexOf(samples.find((s) => s.stats[b])!.kinds[b]!) || a.localeCompare(b))
  L.push(`| command | kind | ${trees.map((t) => `${t}: calls / µs per paid call`).join(' | ')} |`)
  L.push(`|---|---|${trees.map(() => '---:').join('|')}|`)
  for (const n of names) {
    const cells = trees.map((t) => {
      const c = med(t, (s) => (s.stats[n]?.calls ?? 0) / s.ok)
      const u = med(t, (s) => (s.stats[n]?.usec ?? 0) / s.ok)
      return c === 0 ? '–' : `${f2(c)} / ${f2(u)}`
    })
    L.push(`| ${n} | ${kindIn(n)} | ${cells.join(' | ')} |`)
  }
  L.push(
    '',
    '"in scripts": run by a script (`redis.call`), its usec already inside EVALSHA; not summed. commandstats usec is the time between a command\'s start and end, so a',
    'busy machine (redis-server waiting for a core mid-script) inflates it; "redis-server CPU" is the main thread\'s own run time over the same window',
    '(/proc/<pid>/schedstat): the commands plus reading, parsing and answering them, and the flusher\'s idle polls. A busy machine only adds',
    'to either figure, so "min" is the sample least disturbed.',
  )
  if (samples.some((s) => s.monitor)) {
    L.push('', 'MONITOR (--monitor; calls per paid call, sent by the service / run by a script, medians; usec above are not a measurement in this mode):', '')
    L.push(`| command | ${trees.map((t) => `${t}: sent / in scripts`).join(' | ')} |`)
    L.push(`|---|${trees.map(() => '---:').join('|')}|`)
    const mnames = [...new Set(samples.flatMap((s) => Object.keys(s.monitor ?? {})))].sort()
    for (const n of mnames) {
      const cells = trees.map((t) => `${f2(med(t, (s) => (s.monitor?.[n]?.sent ?? 0) / s.ok))} / ${f2(med(t, (s) => (s.monitor?.[n]?.lua ?? 0) / s.ok))}`)
      L.push(`| ${n} | ${cells.join(' | ')} |`)
    }
    L.push('', 'Scripts sent (MONITOR), per tree and round: calls per paid call and KEYS per call (a batch carries each call\'s keys):', '')
    for (const smp of samples)
      for (const [k, v] of Object.entries(smp.monitorScripts ?? {}).sort((a, b) => b[1].calls - a[1].calls))
        L.push(`- ${smp.tree}: ${k}: ${f2(v.calls / smp.ok)} per paid call, ${f1(v.keys / v.calls)} KEYS per call`)
  }
  return L.join('\n')
}

/** The bench's own commands in the window (the drain check's INFO and XLEN): not the service's, left out. */
const OWN = ['info', 'xlen']
const own = (w: CallgrindWindow) => OWN.reduce((a, n) => a + (w.commands[n]?.ir ?? 0), 0)
/** Instructions per paid call: the window's, less the bench's own commands. */
const irPerCall = (s: Sample) => (s.callgrind!.total - own(s.callgrind!)) / s.ok
/**
 * The flusher's reads (XREADGROUP) and acks (ack-outbox.lua) per paid call: the part its rounds set,
 * and those follow the wall clock (how long the load ran under valgrind), not the calls alone.
 */
const flusherPerCall = (s: Sample) => ((s.callgrind!.commands.xread?.ir ?? 0) + (s.callgrind!.scripts['ack-outbox.lua']?.ir ?? 0)) / s.ok
const fmt = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : 'n/a')

function renderCallgrind(samples: Sample[], trees: string[]): string {
  const L: string[] = []
  const w = (s: Sample) => s.callgrind!
  L.push(
    `${CALLS} flat paid calls (${BENCH_SLUG}, price ${BENCH_PRICE}) over ${ACCOUNTS} accounts, ${IN_FLIGHT} in flight, after one warm-up call per account; ` +
      `each sample's redis-server under callgrind, counted from the load's first call until Postgres holds every row and every outbox is empty; the service's periodic clocks ×${STRETCH}.`,
  )
  L.push('')
  L.push('| tree | 2xx | instructions / paid call | less the flusher\'s reads and acks | in scripts | outside: commands sent alone | outside: requests, replies, event loop | flusher rounds per 100 paid calls | load (s, under valgrind) | ledger exact |')
  L.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---|')
  for (const s of samples) {
    const c = w(s)
    const scripts = Object.values(c.scripts).reduce((a, x) => a + x.ir, 0)
    const alone = Object.entries(c.commands).reduce((a, [n, x]) => a + (OWN.includes(n) ? 0 : x.ir), 0)
    // XREADGROUP runs as xreadCommand: one per shard a round.
    const rounds = ((c.commands.xread?.calls ?? 0) / SHARDS / s.ok) * 100
    L.push(
      `| ${s.tree} | ${s.ok} | **${fmt(irPerCall(s))}** | ${fmt(irPerCall(s) - flusherPerCall(s))} | ${fmt(scripts / s.ok)} | ${fmt(alone / s.ok)} | ${fmt(c.rest / s.ok)} | ${f2(rounds)} | ${f1(s.loadMs / 1000)} | ${s.ledger.exact ? 'yes' : '**no**'} |`,
    )
  }
  const med = (t: string, f = irPerCall) => median(samples.filter((s) => s.tree === t).map(f))
  const less = (s: Sample) => irPerCall(s) - flusherPerCall(s)
  if (trees.length === 2)
    L.push(
      '',
      `Ratio ${trees[0]} / ${trees[1]} (instructions per paid call, medians): ${(med(trees[0]!) / med(trees[1]!)).toFixed(3)}×; ` +
        `less the flusher's reads and acks: ${(med(trees[0]!, less) / med(trees[1]!, less)).toFixed(3)}×`,
    )
  for (const t of trees) {
    const mine = samples.filter((s) => s.tree === t)
    if (mine.length > 1) {
      const xs = mine.map(irPerCall)
      L.push('', `${t}: samples ${xs.map(fmt).join(', ')}; spread ${(((Math.max(...xs) - Math.min(...xs)) / Math.min(...xs)) * 100).toFixed(2)}%`)
    }
  }
  L.push('', 'By script (a run is one EVALSHA, a batch or a call alone; named from the commands it ran), each sample:', '')
  L.push('| tree | script | runs / paid call | paid calls / run | instructions / paid call | instructions / run |')
  L.push('|---|---|---:|---:|---:|---:|')
  for (const s of samples)
    for (const [name, r] of Object.entries(w(s).scripts).sort((a, b) => b[1].ir - a[1].ir))
      L.push(`| ${s.tree} | ${name} | ${f2(r.runs / s.ok)} | ${f2(s.ok / r.runs)} | ${fmt(r.ir / s.ok)} | ${fmt(r.ir / r.runs)} |`)
  L.push('', 'Inside the scripts, the commands they ran (calls / inclusive instructions per paid call), each sample:', '')
  for (const s of samples)
    for (const [name, r] of Object.entries(w(s).scripts).sort((a, b) => b[1].ir - a[1].ir)) {
      const cmds = Object.entries(r.commands).sort((a, b) => b[1].ir - a[1].ir)
      const lua = r.ir - cmds.reduce((a, [, c]) => a + c.ir, 0)
      L.push(`- ${s.tree}, ${name}: ${cmds.map(([n, c]) => `${n} ${f2(c.calls / s.ok)} / ${fmt(c.ir / s.ok)}`).join(', ')}; the rest (Lua, its calls into Redis, the batch wrapper) ${fmt(lua / s.ok)}`)
    }
  L.push('', 'Outside the scripts, commands sent on their own (calls / inclusive instructions per paid call; info and xlen are the bench\'s drain check, left out of the total):', '')
  for (const s of samples)
    L.push(`- ${s.tree}: ${Object.entries(w(s).commands).sort((a, b) => b[1].ir - a[1].ir).map(([n, c]) => `${n} ${f2(c.calls / s.ok)} / ${fmt(c.ir / s.ok)}`).join(', ') || 'none'}`)
  return L.join('\n')
}

const children: Child[] = []
async function cleanup() {
  for (const c of children.splice(0).reverse()) await c.stop().catch(() => {})
}
process.on('SIGINT', async () => {
  await cleanup()
  process.exit(130)
})

try {
  await Bun.write(join(OUT, '.keep'), '')
  const upPort = freePort()
  const upstream = startChild('fake-upstream', [BUN, 'bench/fake-upstream.ts'], { PORT: String(upPort) }, join(OUT, 'upstream.log'))
  children.push(upstream)
  const upstreamUrl = `http://127.0.0.1:${upPort}`
  await waitHttp(upstreamUrl, upstream)

  const head = Bun.spawnSync(['git', '-C', ROOT, 'rev-parse', '--short=7', 'HEAD']).stdout.toString().trim()
  const trees = [{ name: `current (${head})`, root: ROOT }, ...(baseline ? [{ name: `baseline ${baseline.commit}`, root: baseline.root }] : [])]
  const samples: Sample[] = []
  for (let r = 0; r < ROUNDS; r++)
    for (const t of r % 2 ? [...trees].reverse() : trees) {
      const s = await sample(t, upstreamUrl, r)
      samples.push(s)
      const bad = Object.entries(s.statuses).filter(([st]) => Number(st) >= 300)
      if (s.callgrind) {
        const sc = Object.entries(s.callgrind.scripts).map(([n, x]) => `${n} ${fmt(x.ir / s.ok)}`).join(', ')
        console.error(`round ${r + 1} ${t.name}: ${s.ok} 2xx in ${Math.round(s.loadMs)} ms, drained ${Math.round(s.drainMs)} ms after; ${fmt(irPerCall(s))} instructions per paid call (${sc}; ${s.callgrind.dumps} dumps); ledger ${s.ledger.exact ? 'exact' : `NOT exact ${JSON.stringify(s.ledger)}`}`)
      } else console.error(
        `round ${r + 1} ${t.name}: ${s.ok} 2xx${bad.length ? ` (${bad.map(([st, n]) => `${n}×${st}`).join(', ')})` : ''} in ${Math.round(s.loadMs)} ms, drained ${Math.round(s.drainMs)} ms after; ` +
          `${f1(perCall(s))} µs of Redis per paid call (server CPU ${f1(s.serverCpuUs / s.ok)}; scripts ${f1(perCall(s, 'scripts'))}, write-behind ${f1(perCall(s, 'write-behind'))}, others ${f1(perCall(s, 'others'))}); ledger ${s.ledger.exact ? 'exact' : `NOT exact ${JSON.stringify(s.ledger)}`}`,
      )
    }
  console.log(opt.callgrind ? renderCallgrind(samples, trees.map((t) => t.name)) : render(samples, trees.map((t) => t.name)))
  await cleanup()
  process.exit(samples.every((s) => s.ledger.exact && s.ok === CALLS) ? 0 : 1)
} catch (e) {
  console.error(e)
  console.error(`logs: ${OUT}`)
  await cleanup()
  process.exit(1)
}
