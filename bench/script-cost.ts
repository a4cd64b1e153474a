/**
 * What the hot scripts cost Redis' one thread, counted in instructions: a private redis-server runs
 * under valgrind's callgrind, and each case's calls are bracketed by `callgrind_control -z` / `-d`.
 * An instruction count does not move with the machine's load (the same count twice, with the other
 * core busy or not), so it shows a script change of a few percent that throughput runs on two
 * shared cores cannot (their round-to-round spread is ±15%). It counts the whole redis-server
 * process: the script, the commands it runs, reading the request and writing the reply.
 *
 * Cases, per tree: debit.lua for the owner token, a top-level agent and a depth-4 agent, each call
 * alone (the plain script) and in batches of 16 issued in one turn (the batch wrapper, as the
 * service sends them under load); then, batches of 16, what follows the upstream: the flat call's
 * filing (record-calls.lua) against the metered call's reservation and settle (settle.lua); last,
 * the owner's debit in batches of 2 calls, of one account and of 2 (the batches the real load makes).
 *
 *   ./node_modules/.bin/bun bench/script-cost.ts [--baseline <checkout>] [--calls 2560] [--no-write]
 *
 * `--calls`: each case long enough to pay its own share of Lua's collector. It runs in cycles with a
 * pause after each, so a short case that starts in a pause pays none of it: at 320 calls the owner's
 * batched case, right after the owner's lone one that ends a cycle, counted 0 instructions of
 * `luaC_step` a call against depth-4's 3,256. At 2,560 each case spans several cycles and pays in
 * proportion to what it allocates, and three runs agree within ±0.3% (bench/RESULTS.md, issue 42).
 * `--baseline`: an earlier checkout (with node_modules) measured in the same run, on its own fresh
 * redis-server, through its own src/ and lua/. Needs valgrind (callgrind_control) on the PATH.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import Redis from 'ioredis'
import { resolveBaseline } from './lib/baseline'
import { UNDER_VALGRIND } from './lib/callgrind-redis'
import { debitCases, seedAccount } from './lib/debit-cases'
import { freePort } from './lib/proc'
import { replaceSection } from './lib/sections'

const { values: opt } = parseArgs({
  options: {
    baseline: { type: 'string' },
    calls: { type: 'string', default: '2560' },
    /** Extra batch sizes of the owner's debit, each call of a batch another account's (where a small batch stops paying). */
    sizes: { type: 'string', default: '' },
    'no-write': { type: 'boolean', default: false },
  },
})
const CALLS = Number(opt.calls)
const BATCH = 16
const ROOT = join(import.meta.dir, '..')
const RESULTS = join(ROOT, 'bench', 'RESULTS.md')
const TITLE = '## Redis instructions per script call (callgrind)'
const END = '<!-- script-cost:end -->'

/** A redis-server under callgrind, its dumps in a temp dir. */
async function startCountedRedis() {
  const dir = mkdtempSync(join(tmpdir(), 'pab-callgrind-'))
  const port = freePort()
  const names = process.env.SCRIPT_COST_KEEP ? ['--compress-strings=no', '--compress-pos=no'] : []
  // --hz 1: the server's timer work (which runs longer under valgrind, so more of it lands in a
  // case on a busy machine) is not a call's cost; at the default 10 it moved a case by up to ±5,000.
  const proc = Bun.spawn(['valgrind', '--tool=callgrind', ...names, `--callgrind-out-file=${dir}/cg.%p`, 'redis-server', '--port', String(port), ...UNDER_VALGRIND, '--hz', '1'], {
    stdout: 'ignore',
    stderr: 'ignore',
  })
  // Never left running: a run that fails still ends the server and removes its dumps.
  process.on('exit', () => {
    proc.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
  })
  // valgrind takes a few seconds to start it.
  for (let i = 0; Bun.spawnSync(['redis-cli', '-p', String(port), 'ping']).stdout.toString().trim() !== 'PONG'; i++) {
    if (i > 150 || proc.exitCode !== null) throw new Error('redis-server under valgrind did not start')
    await Bun.sleep(200)
  }
  const redis = new Redis({ port, host: '127.0.0.1', enableAutoPipelining: true })
  const control = (flag: string) => {
    const r = Bun.spawnSync(['callgrind_control', flag, String(proc.pid)])
    if (r.exitCode !== 0) throw new Error(`callgrind_control ${flag}: ${r.stderr.toString()}`)
  }
  return {
    redis,
    /** Instructions redis-server executed while `fn` ran. */
    async count(fn: () => Promise<void>, name = ''): Promise<number> {
      control('-z')
      await fn()
      const before = new Set(readdirSync(dir))
      control('-d')
      const dump = readdirSync(dir).find((f) => !before.has(f))
      const summary = dump && /^summary: (\d+)/m.exec(readFileSync(join(dir, dump), 'utf8'))
      if (!summary) throw new Error('no callgrind dump')
      // SCRIPT_COST_KEEP=<dir>: each case's dump kept there, for callgrind_annotate.
      const keep = process.env.SCRIPT_COST_KEEP
      if (keep && dump) Bun.spawnSync(['cp', join(dir, dump), join(keep, name.replace(/[^a-z0-9]+/gi, '-'))])
      return Number(summary[1])
    },
    async stop() {
      redis.disconnect()
      proc.kill('SIGKILL')
      await proc.exited
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

interface Row {
  case: string
  perCall: number
}

/** Every case on `root`'s scripts and modules, against a fresh counted redis-server. */
async function measureTree(root: string): Promise<Row[]> {
  const mod = (p: string) => import(join(root, p))
  // A module that moved between trees: the first path the tree has.
  const firstOf = async (...paths: string[]) => {
    for (const p of paths) if (await Bun.file(join(root, p)).exists()) return mod(p)
    throw new Error(`none of ${paths.join(', ')} in ${root}`)
  }
  const { hashToken } = await mod('src/auth/tokens.ts')
  const { windowsAt } = await firstOf('src/windows.ts', 'src/ledger/windows.ts')
  const { runDebit } = await mod('src/lua/debit.ts')
  const { runSettle } = await mod('src/lua/settle.ts')
  const { runRecordCalls: recordCallsOf } = await mod('src/lua/record-calls.ts')
  const { CallFiling } = await mod('src/paid-request/call-filing.ts')
  // A tree before issue 42's filing of several shards in one script took the batch's shard first.
  const runRecordCalls = (c: unknown, shard: number, calls: unknown[], o: unknown) => (recordCallsOf.length === 4 ? recordCallsOf(c, shard, calls, o) : recordCallsOf(c, calls, o))
  const { Keys } = await mod('src/redis/keys.ts')
  const { loadScripts, readScripts, BATCHED } = await mod('src/redis/scripts.ts')
  const { batchedLua } = await mod('src/redis/batched-scripts.ts')

  const server = await startCountedRedis()
  const keys = new Keys(`cost${Date.now().toString(36)}`)
  const ctx = { redis: server.redis, keys, scripts: loadScripts(server.redis), clock: { now: () => Date.now() } }
  // Every script, and every batch wrapper, loaded before anything is counted, as a running service
  // has them: the compile of a script's first EVAL is not a call's cost (it was counted in the first
  // batched case, the owner's, ~35,000 instructions a call).
  for (const s of readScripts() as { name: string; lua: string; numberOfKeys: number | null }[]) {
    await server.redis.script('LOAD', s.lua)
    if (BATCHED.has(s.name)) await server.redis.script('LOAD', batchedLua(s.lua, s.numberOfKeys))
  }
  const acct = 'acc_07_scriptcost'
  // The account's and agents' hashes as the tree's scripts make them: hashtables where they write the layout field.
  const layoutModule = (await Bun.file(join(root, 'src/redis/hash-layout.ts')).exists()) ? await mod('src/redis/hash-layout.ts') : null
  const layout: Record<string, string> = layoutModule ? { [layoutModule.LAYOUT_FIELD]: layoutModule.LAYOUT_VALUE } : {}
  await seedAccount(server.redis, keys, hashToken, acct, layout)
  // The spread cases' accounts: each call of a batch another account's (of the same shard).
  const spread = Array.from({ length: BATCH }, (_, j) => `${acct}_${j}`)
  for (const a of spread) await server.redis.hset(keys.account(a), { ...layout, owner: hashToken('owner'), balance: 1e12 })
  const now = Date.now()
  const debitArgs = debitCases({ hashToken, acct, now, windows: windowsAt(now), idPrefix: 'call_cost_' })
  const batches = <T>(make: () => T) => Array.from({ length: CALLS / BATCH }, () => Array.from({ length: BATCH }, make))
  const rows: Row[] = []
  const measure = async (name: string, fn: () => Promise<void>) => rows.push({ case: name, perCall: Math.round((await server.count(fn, name)) / CALLS) })

  for (const who of ['owner', 'depth-1', 'depth-4'] as const) {
    await runDebit(ctx, debitArgs(who)) // the minute's first call sets its windows' expiries
    await measure(`debit.lua, ${who}, alone`, async () => {
      for (let i = 0; i < CALLS; i++) await runDebit(ctx, debitArgs(who))
    })
    await measure(`debit.lua, ${who}, batches of ${BATCH}`, async () => {
      for (const b of batches(() => debitArgs(who))) await Promise.all(b.map((a) => runDebit(ctx, a)))
    })
  }

  const record = (callId: string) =>
    JSON.stringify({ call_id: callId, account_id: acct, agent_id: null, slug: 'bench.search', outcome: 'ok', http_status: 200, latency_ms: 3, at: new Date(now).toISOString(), refunded: false }).slice(0, -1)
  // Then, uncounted debits, the same filing and settle with each call of a batch another account's
  // (a script's batch is one shard's calls: one busy account's, or many accounts').
  for (const [metered, many] of [[false, false], [true, false], [false, true], [true, true]] as const) {
    let j = 0
    const calls = batches(() => debitArgs('owner', metered, many ? spread[j++ % BATCH] : acct))
    const label = metered ? 'metered' : 'flat'
    const of = many ? `, ${BATCH} accounts a batch` : ''
    const debits = async () => {
      for (const b of calls) await Promise.all(b.map((a) => runDebit(ctx, a)))
    }
    if (many) await debits()
    else await measure(`${label}: debit.lua, batches of ${BATCH}`, debits)
    if (metered)
      await measure(`metered: settle.lua (charge, release, file), batches of ${BATCH}${of}`, async () => {
        for (const b of calls)
          await Promise.all(
            b.map((a) =>
              runSettle(ctx, { now, accountId: a.accountId, agentId: null, callId: a.callId, day: a.day, chain: [], tokens: { input: 100, cached: 0, output: 200 }, source: 'provider',
                file: { recordHead: record(a.callId), organic: true, recentCalls: 200, settledTtlS: 3600 } }),
            ),
          )
      })
    else
      await measure(`flat: record-calls.lua (file), batches of ${BATCH}${of}`, async () => {
        for (const b of calls)
          await runRecordCalls(ctx, keys.shardOf(acct), b.map((a) => ({ accountId: a.accountId, callId: a.callId, agentId: null, recordJson: `${record(a.callId)},"charged":5}`, charged: 5, organic: true, idempotency: null })), { recentCalls: 200, settledTtlS: 3600 })
      })
  }
  // Last, so that every case above runs on the state it always had: the debit as the real load
  // sends it (bench/redis-cpu.ts: ~2 calls a batch, each another account's), the batch wrapper's
  // cost at its smallest batch beside the 16-call batches above, with one account and with two (the
  // spread accounts are warm by now).
  await measure('debit.lua, owner, batches of 2, 1 account', async () => {
    for (let i = 0; i < CALLS; i += 2) await Promise.all([0, 1].map(() => runDebit(ctx, debitArgs('owner', false, spread[0]))))
  })
  await measure('debit.lua, owner, batches of 2, 2 accounts a batch', async () => {
    for (let i = 0; i < CALLS; i += 2) await Promise.all([0, 1].map((k) => runDebit(ctx, debitArgs('owner', false, spread[(i + k) % BATCH]))))
  })
  // A busy account's batch that takes the turn's lone calls of other accounts with it (src/redis/batched-scripts.ts):
  // 5 calls of one account and 3 of three others, interleaved as they arrive.
  await measure('debit.lua, owner, batches of 8: 5 calls of 1 account, 3 of 3 others', async () => {
    const order = [1, 1, 2, 1, 3, 1, 4, 1]
    for (let i = 0; i + 8 <= CALLS; i += 8) await Promise.all(order.map((a) => runDebit(ctx, debitArgs('owner', false, spread[a]))))
  })
  for (const size of (opt.sizes ?? '').split(',').filter(Boolean).map(Number)) {
    await measure(`debit.lua, owner, batches of ${size}, ${size} accounts a batch`, async () => {
      for (let i = 0; i + size <= CALLS; i += size) await Promise.all(Array.from({ length: size }, (_, k) => runDebit(ctx, debitArgs('owner', false, spread[(i + k) % BATCH]))))
    })
    await measure(`debit.lua, owner, batches of ${size}, 1 account`, async () => {
      for (let i = 0; i + size <= CALLS; i += size) await Promise.all(Array.from({ length: size }, () => runDebit(ctx, debitArgs('owner', false, spread[1]))))
    })
  }
  // After the rest, whose state it leaves alone. A fleet's turn (bench/redis-cpu.ts): each call of it
  // another shard's, filed as the service files them (src/paid-request/call-filing.ts: one script a
  // shard, or, on a single Redis, one for all).
  {
    const sharded = Array.from({ length: BATCH }, (_, s) => `acc_${String(s).padStart(2, '0')}_scriptcost`)
    for (const a of sharded) await server.redis.hset(keys.account(a), { owner: hashToken('owner'), balance: 1e12 })
    let j = 0
    const calls = batches(() => debitArgs('owner', false, sharded[j++ % BATCH]))
    for (const b of calls) await Promise.all(b.map((a) => runDebit(ctx, a)))
    const filing = new CallFiling(ctx, { recentCalls: 200, settledTtlS: 3600 })
    await measure(`flat: record-calls.lua (file) through the call filing, ${BATCH} calls a turn, each another shard's`, async () => {
      for (const b of calls)
        await Promise.all(b.map((a) => filing.file({ accountId: a.accountId, callId: a.callId, agentId: null, recordJson: `${record(a.callId)},"charged":5}`, charged: 5, organic: true, idempotency: null })))
    })
  }
  await server.stop()
  return rows
}

/**
 * The floor under the flat call's two scripts: the same Redis commands, keys and values the debit and
 * the filing write for a call (balance, call record and its expiry, in-flight member, two outbox
 * entries, the recent list), in batches of 16 with a call id and a record per call, and no check, no
 * read, no decoding. What the scripts cost above it is Lua and the reads; what it costs is the write
 * set itself, which only fewer or smaller writes can lower.
 */
async function measureFloor(): Promise<Row[]> {
  const server = await startCountedRedis()
  const r = server.redis
  const loop = (body: string, after = '') => `local n = #ARGV / 2
local landed, ents = {}, {}
for i = 1, n do
  local id, rec = ARGV[2 * i - 1], ARGV[2 * i]
  local ck = '{s}:call:' .. id
${body}
end
${after}
return n`
  const debitWrites = `  local bal = redis.call('HINCRBY', KEYS[1], 'balance', '-5')
  redis.call('HSET', ck, 'price', '5', 'agent', '', 'target', 'bench.search', 'state', 'debited', 'day', '20000', 'at', '1790000000000')
  redis.call('EXPIRE', ck, '172800')
  landed[#landed + 1] = '1790000060000'
  landed[#landed + 1] = 'acc|' .. id`
  const debitLine = `'acc||-5|' .. bal .. '|' .. id .. '|1790000000000|bench.search'`
  const filingWrites = `  redis.call('HSET', ck, 'recorded', '1', 'state', 'filed')
  redis.call('EXPIRE', ck, '300')
  redis.call('LPUSH', KEYS[4], rec)
  landed[i] = 'acc|' .. id`
  // Each group its own call ids: a group's filing finds the records its debit made, and no variant
  // finds what another group left (a key that exists already is cheaper to write).
  const variants: [string, string, number][] = [
    [
      "the flat debit's writes, one packed entry a call",
      loop(`${debitWrites}
  redis.call('XADD', KEYS[3], '*', 'kind', 'packed_debit', 'd', ${debitLine})`, `redis.call('ZADD', KEYS[2], unpack(landed))`),
      0,
    ],
    [
      "the flat filing's writes, one entry a call",
      loop(
        `${filingWrites}
  redis.call('XADD', KEYS[3], '*', 'kind', 'call', 'id', id .. ':call', 'organic', '1', 'charged', '5', 'rec', rec)`,
        `redis.call('ZREM', KEYS[2], unpack(landed))`,
      ),
      0,
    ],
    [
      "the flat debit's writes, one entry a batch",
      loop(`${debitWrites}
  ents[i] = ${debitLine}`, `redis.call('ZADD', KEYS[2], unpack(landed))
redis.call('XADD', KEYS[3], '*', 'kind', 'packed_debits', 'd', table.concat(ents, '\\n'))`),
      1,
    ],
    [
      "the flat filing's writes, one entry a batch",
      loop(
        `${filingWrites}
  ents[i] = id .. '|5|' .. rec`,
        `redis.call('ZREM', KEYS[2], unpack(landed))
redis.call('XADD', KEYS[3], '*', 'kind', 'packed_calls', 'c', table.concat(ents, '\\n'))`,
      ),
      1,
    ],
    [
      'the flat debit\'s writes, balance written once a batch, call record one SET … EX, entry one field a call',
      loop(`  local bal = 1000000 - 5 * i
  redis.call('SET', ck, '5|||bench.search|debited|20000|1790000000000', 'EX', '172800')
  landed[#landed + 1] = '1790000060000'
  landed[#landed + 1] = 'acc|' .. id
  redis.call('XADD', KEYS[3], '*', 'kind', 'packed_debit', 'd', ${debitLine})`, `redis.call('HSET', KEYS[1], 'balance', '999920')
redis.call('ZADD', KEYS[2], unpack(landed))`),
      2,
    ],
    [
      "the flat filing's writes, call record one SET … EX, entry one field a call",
      loop(
        `  redis.call('SET', ck, '5|||bench.search|filed|20000|1790000000000|1', 'EX', '300')
  redis.call('LPUSH', KEYS[4], rec)
  redis.call('XADD', KEYS[3], '*', 'p', 'call|' .. id .. '|1|5', 'rec', rec)
  landed[i] = 'acc|' .. id`,
        `redis.call('ZREM', KEYS[2], unpack(landed))`,
      ),
      2,
    ],
    // The metered call's writes the same way (its floor against the issue's 200,000): the reservation a
    // hold (balance and held, the day spend once a batch), its record a hash of the fields the settle
    // reads, with its expiry; the settle's charge and release once a batch (balance, held, remainder,
    // the day spend), the record filed by one SET … EX, the recent list, one entry a batch.
    [
      "the metered debit's writes, balance, held and day spend once a batch, record a hash, no entry",
      loop(`  redis.call('HSET', ck, 'price', '25', 'agent', '', 'target', 'proxy:openai', 'state', 'debited', 'day', '20000', 'at', '1790000000000',
    'metered', '1', 'hold', '1', 'model', 'gpt-4o-mini', 'p_in', '150000', 'p_cached', '75000', 'p_out', '600000', 'max_out', '4096', 'clamped', '0')
  redis.call('EXPIRE', ck, '172800')
  landed[#landed + 1] = '1790000060000'
  landed[#landed + 1] = 'acc|' .. id`, `redis.call('HSET', KEYS[1], 'balance', '999600', 'held', '400')
redis.call('INCRBY', KEYS[5], '400')
redis.call('ZADD', KEYS[2], unpack(landed))`),
      3,
    ],
    [
      "the metered debit's writes, the same with its record one SET … EX",
      loop(`  redis.call('SET', ck, 'debited|25|20000|1790000000000|||1|gpt-4o-mini|150000|75000|600000|4096|0|proxy:openai', 'EX', '172800')
  landed[#landed + 1] = '1790000060000'
  landed[#landed + 1] = 'acc|' .. id`, `redis.call('HSET', KEYS[1], 'balance', '999600', 'held', '400')
redis.call('INCRBY', KEYS[5], '400')
redis.call('ZADD', KEYS[2], unpack(landed))`),
      4,
    ],
    [
      "the metered settle's writes, charge and release once a batch, record one SET … EX, one entry a batch",
      loop(
        `  redis.call('SET', ck, 'filed', 'EX', '300')
  redis.call('LPUSH', KEYS[4], rec)
  ents[i] = id .. '|1|3||67|acc||-3|999997|412000|0|100|0|200|provider|1790000000000|12|proxy:openai|gpt-4o-mini|' .. rec
  landed[i] = 'acc|' .. id`,
        `redis.call('XADD', KEYS[3], '*', 'kind', 'packed_charged_calls', 'c', table.concat(ents, '\\n'))
redis.call('HSET', KEYS[1], 'balance', '999952', 'held', '0', 'mc_rem', '412000')
redis.call('INCRBY', KEYS[5], '-352')
redis.call('ZREM', KEYS[2], unpack(landed))`,
      ),
      3,
    ],
  ]
  const keys = ['{s}:acct:acc', '{s}:inflight', '{s}:outbox', '{s}:calls:acc', '{s}:spent:acc:20000']
  await r.hset('{s}:acct:acc', 'balance', 1e12)
  const rec = (id: string) => JSON.stringify({ call_id: id, account_id: 'acc', agent_id: null, slug: 'bench.search', outcome: 'ok', http_status: 200, latency_ms: 3, at: new Date().toISOString(), refunded: false, charged: 5 })
  const rows: Row[] = []
  for (const [name, lua, group] of variants) {
    const ids = Array.from({ length: CALLS }, (_, i) => `call_floor_${group}_${i}`)
    const sha = (await r.script('LOAD', lua)) as string
    const n = await server.count(async () => {
      for (let b = 0; b < CALLS / BATCH; b++) {
        const argv = ids.slice(b * BATCH, (b + 1) * BATCH).flatMap((id) => [id, rec(id)])
        await r.evalsha(sha, keys.length, ...keys, ...argv)
      }
    }, name)
    rows.push({ case: `floor: ${name}, batches of ${BATCH}`, perCall: Math.round(n / CALLS) })
  }
  // A call alone (what most debits of a fleet spread over many accounts are): a script start with the
  // keys and arguments of the owner's plain debit (9 and 13: the unused tail left out, src/lua/debit.ts)
  // that does nothing, and one that only makes the debit's libraries
  // (its part above --@batch-per-call, made again by every plain call).
  const { readScripts } = await import(join(ROOT, 'src/redis/scripts.ts'))
  const debit = (readScripts() as { name: string; lua: string }[]).find((x) => x.name === 'debit')!.lua
  const alone: [string, string][] = [
    ["a script start with the owner's plain debit's 9 keys and 13 arguments, doing nothing", 'return 0'],
    ["the same, making the debit's libraries", debit.slice(0, debit.indexOf('--@batch-per-call')) + '\nreturn 0'],
  ]
  const keys9 = Array.from({ length: 9 }, (_, i) => `{s}:key:${i}`)
  const args13 = Array.from({ length: 13 }, (_, i) => `argument-${i}`)
  for (const [name, lua] of alone) {
    const sha = (await r.script('LOAD', lua)) as string
    const n = await server.count(async () => {
      for (let i = 0; i < CALLS; i++) await r.evalsha(sha, 9, ...keys9, ...args13)
    }, name)
    rows.push({ case: `floor: ${name}, alone`, perCall: Math.round(n / CALLS) })
  }
  // What a fleet's flat paid call asks of Redis at the least with this design's commands (issue 42's
  // 40 µs): the owner's plain debit alone (its 9 keys and 13 arguments; the 8 commands it runs under the
  // fleet's load: bench/redis-cpu.ts) and its filing as a group of one (5 keys, 7 arguments, its 6
  // commands), each doing nothing else. The flusher's reads and acks come on top.
  const fleet: [string, string, (id: string) => [string[], string[]]][] = [
    [
      "a lone flat debit's 8 commands (HMGET of 9 fields, MGET, INCR, HINCRBY, INCRBY, SET … EX, ZADD, XADD), 9 keys and 13 arguments",
      `local a = redis.call('HMGET', KEYS[1], 'balance', 'state', 'cap', 'budget', 'plan', 'low', 'rate', 'allow', 'day')
local m = redis.call('MGET', KEYS[5], KEYS[6], KEYS[3], KEYS[7])
redis.call('INCR', KEYS[5])
local bal = redis.call('HINCRBY', KEYS[1], 'balance', -5)
redis.call('INCRBY', KEYS[3], 5)
redis.call('SET', KEYS[7], ARGV[1], 'EX', 172800)
redis.call('ZADD', KEYS[9], ARGV[2], ARGV[3])
redis.call('XADD', KEYS[8], '*', 'kind', 'packed_debit', 'd', ARGV[4])
return {0, bal}`,
      (id) => [
        ['{s}:acct:acc', '{s}:agent:acc:_owner', '{s}:spent:acc:20000', '{s}:reqs:acc:20000', '{s}:rl:acc:_:1', '{s}:rl:acc:_:0', `{s}:call:${id}`, '{s}:outbox', '{s}:inflight'],
        ['5|||bench.search|debited|20000|1790000000000', '1790000060000', `acc|${id}`, `acc||-5|999995|${id}|1790000000000|bench.search`, ...Array.from({ length: 9 }, (_, i) => `argument-${i}`)],
      ],
    ],
    [
      "a lone flat filing's 6 commands (SET … GET, LPUSH, XADD, ZREM, 2 HINCRBY), 5 keys and 7 arguments",
      `local was = redis.call('SET', KEYS[5], 'filed', 'EX', ARGV[2], 'GET')
redis.call('LPUSH', KEYS[4], ARGV[5])
redis.call('XADD', KEYS[2], '*', 'kind', 'call', 'id', ARGV[6] .. ':call', 'organic', '1', 'charged', ARGV[7], 'rec', ARGV[5])
redis.call('ZREM', KEYS[3], ARGV[6])
redis.call('HINCRBY', KEYS[1], 'organic_calls_routed', 1)
redis.call('HINCRBY', KEYS[1], 'credits_honored', 5)
return {0}`,
      (id) => [
        ['{s}:stats', '{s}:outbox', '{s}:inflight', '{s}:calls:acc', `{s}:call:${id}`],
        ['100', '300', '1', '1', rec(id), `acc|${id}`, '5'],
      ],
    ],
  ]
  for (const [name, lua, call] of fleet) {
    const sha = (await r.script('LOAD', lua)) as string
    const n = await server.count(async () => {
      for (let i = 0; i < CALLS; i++) {
        const [k, a] = call(`call_fleet_${i}`)
        await r.evalsha(sha, k.length, ...k, ...a)
      }
    }, name)
    rows.push({ case: `floor: ${name}, alone`, perCall: Math.round(n / CALLS) })
  }
  await server.stop()
  return rows
}

function render(cur: Row[], base: Row[] | null, baseName: string, floor: Row[], baselineCommit = ''): string {
  const head = base ? `| Case | current | ${baseName} | current / baseline |\n|---|---:|---:|---:|` : '| Case | instructions per call |\n|---|---:|'
  const fmt = (n: number) => n.toLocaleString('en-US')
  const lines = cur.map((r) => {
    const b = base?.find((x) => x.case === r.case)
    return base ? `| ${r.case} | ${fmt(r.perCall)} | ${b ? fmt(b.perCall) : 'n/a'} | ${b ? (r.perCall / b.perCall).toFixed(2) + '×' : ''} |` : `| ${r.case} | ${fmt(r.perCall)} |`
  })
  const get = (rows: Row[], c: string) => rows.find((r) => r.case === c)?.perCall ?? NaN
  const derived = (rows: Row[]) => ({
    depth: get(rows, `debit.lua, depth-4, batches of ${BATCH}`) / get(rows, `debit.lua, owner, batches of ${BATCH}`),
    metered:
      (get(rows, `metered: debit.lua, batches of ${BATCH}`) + get(rows, `metered: settle.lua (charge, release, file), batches of ${BATCH}`)) /
      (get(rows, `flat: debit.lua, batches of ${BATCH}`) + get(rows, `flat: record-calls.lua (file), batches of ${BATCH}`)),
  })
  const d = derived(cur)
  const db = base ? derived(base) : null
  return [
    TITLE,
    '',
    `Command: \`./node_modules/.bin/bun bench/script-cost.ts${baselineCommit ? ` --baseline <checkout of ${baselineCommit}>` : ''} --calls ${CALLS}\``,
    '',
    `Run at ${new Date().toISOString()}. Instructions redis-server executed per call (valgrind callgrind, the whole process: script, commands, request and reply), ${CALLS} calls a case. An instruction count does not move with the machine's load, so it shows what throughput runs on shared cores cannot; it is not time (a cache miss costs more than an add).`,
    '',
    head,
    ...lines,
    '',
    `- depth-4 / owner debit, batched: ${d.depth.toFixed(2)}×${db ? ` (baseline ${db.depth.toFixed(2)}×)` : ''}`,
    `- metered / flat, Redis' part of the call (debit + settle.lua against debit + record-calls.lua), batched: ${d.metered.toFixed(2)}×${db ? ` (baseline ${db.metered.toFixed(2)}×)` : ''}`,
    ...floor.map((f) => `- ${f.case}: ${f.perCall.toLocaleString('en-US')} (the same commands with no checks, reads or decoding: measureFloor)`),
    END,
  ].join('\n')
}

async function main() {
  const baseline = resolveBaseline(opt.baseline)
  console.log('measuring the current tree...')
  const cur = await measureTree(ROOT)
  let base: Row[] | null = null
  if (baseline) {
    console.log(`measuring ${baseline.root} (${baseline.commit})...`)
    base = await measureTree(baseline.root)
  }
  console.log('measuring the floor...')
  const floor = await measureFloor()
  const section = render(cur, base, baseline ? `baseline ${baseline.commit}` : '', floor, baseline?.commit ?? '')
  console.log('\n' + section)
  if (!opt['no-write']) replaceSection(RESULTS, TITLE, END, section)
}

await main()
process.exit(0)
