/**
 * The batched debit (src/redis/batched-scripts.ts) reads each hash once per batch through
 * lua/lib/hash-memo.lua, where each call alone would read its account, its agent and every
 * ancestor again. The memo must change nothing but the cost: the same calls give the same replies
 * and leave the same Redis behind, whether they run as one batch or one plain script at a time —
 * over random fleets whose budgets, caps, per-call maxima, allowlists, kills and breakers refuse,
 * clamp and trip inside the batch. On a private redis-server, so INFO commandstats counts this
 * file's commands only.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import Redis from 'ioredis'
import { hashToken } from '../../src/auth/tokens'
import { windowsAt } from '../../src/windows'
import { runDebit, type DebitArgs, type DebitReply } from '../../src/lua/debit'
import type { RedisContext } from '../../src/redis/context'
import { Keys } from '../../src/redis/keys'
import { loadScripts } from '../../src/redis/scripts'
import { parseOutboxEntry } from '../../src/write-behind/outbox'
import { privateScriptServer } from '../helpers/script-rig'

const rig = privateScriptServer()
let redis: Redis
beforeAll(() => {
  redis = rig.redis
})
const ctxOf = rig.ctxOf
const NOW = Date.UTC(2026, 10, 25, 12, 0, 30)
const ACCT = 'acc_07_batchmemo'

interface AgentSpec {
  /** Index of the parent among the agents before it, or null for a top-level agent. */
  parent: number | null
  budget: number | null
  spent: number
  dailyCap: number | null
  perCallMax: number | null
  allow: string | null
  killed: boolean
  brkCredits: number | null
  /** A temporary raise standing on the hash (lua/lib/raises.lua, docs/api.md §13b); absent = none. */
  raise?: RaiseSpec
  /** What it spent on NOW's HKT day already (its `day` and `day_spent`); absent = nothing that day. */
  spentToday?: number
}
interface RaiseSpec {
  field: 'daily_cap' | 'allow' | 'budget'
  /** The raised value the field holds until the lapse. */
  value: string
  /** ms from NOW. */
  lapses: number
}
interface Fleet {
  balance: number
  /** Requests per minute of every token. */
  rateLimit: number
  accountDailyCap: number | null
  /** The account's warning levels (docs/api.md §13a) as stored: null = the default, '' = off. */
  thresholds: string | null
  agents: AgentSpec[]
  /** A raise of the account's daily cap (daily_cap only). */
  accountRaise?: RaiseSpec
}
interface CallSpec {
  /** -1: the owner token; else an agent's index. */
  who: number
  price: number
  target: string
  fingerprint: string
  /** Metered: the reservation comes from token bounds and may be clamped by what the limits leave. */
  metered: boolean
  /** ms from NOW (12:00:30): calls of one batch may straddle minutes, in either order. */
  at: number
  /** The run budget an agent's call names (docs/api.md §13c). */
  run?: DebitArgs['run']
  /** Resent: the call id of the call at this index again (ioredis resending a lost reply's script). */
  resends?: number
  /** Arguments of this call only (the breaker's defaults). */
  args?: Partial<DebitArgs>
}

const depthOf = (agents: AgentSpec[], i: number): number => (agents[i]!.parent === null ? 1 : 1 + depthOf(agents, agents[i]!.parent!))
const chainOf = (agents: AgentSpec[], i: number): number[] => {
  const out: number[] = []
  for (let p = agents[i]!.parent; p !== null; p = agents[p]!.parent) out.push(p)
  return out
}
const agentId = (i: number) => `agt_m${i}`

const agentSpec = (i: number) =>
  fc.record({
    parent: i === 0 ? fc.constant(null) : fc.option(fc.integer({ min: 0, max: i - 1 }), { nil: null, freq: 3 }),
    budget: fc.option(fc.integer({ min: 0, max: 120 }), { nil: null }),
    spent: fc.integer({ min: 0, max: 30 }),
    dailyCap: fc.option(fc.integer({ min: 0, max: 90 }), { nil: null, freq: 2 }),
    perCallMax: fc.option(fc.integer({ min: 1, max: 25 }), { nil: null, freq: 3 }),
    allow: fc.option(fc.constantFrom('a.*', 'b.x', 'proxy:llm', 'a.x\nb.x'), { nil: null, freq: 3 }),
    killed: fc.integer({ min: 0, max: 9 }).map((x) => x < 2),
    brkCredits: fc.option(fc.integer({ min: 5, max: 60 }), { nil: null, freq: 2 }),
  })

const fleetArb: fc.Arbitrary<Fleet> = fc.integer({ min: 1, max: 5 }).chain((n) =>
  fc.record({
    balance: fc.integer({ min: 0, max: 400 }),
    rateLimit: fc.integer({ min: 2, max: 30 }),
    accountDailyCap: fc.option(fc.integer({ min: 20, max: 300 }), { nil: null }),
    thresholds: fc.option(fc.constantFrom('', '10,50', '5,30,60,90,100'), { nil: null }),
    agents: fc.tuple(...Array.from({ length: n }, (_, i) => agentSpec(i))).map((agents) => {
      // Depth at most 4: a level past it hangs from the root instead.
      for (let i = 0; i < agents.length; i++) if (depthOf(agents, i) > 4) agents[i]!.parent = null
      return agents
    }),
  }),
)

const callsArb = (agents: number) =>
  fc.array(
    fc.record({
      who: fc.integer({ min: -1, max: agents - 1 }),
      price: fc.integer({ min: 0, max: 30 }),
      target: fc.constantFrom('a.x', 'b.x', 'c.y'),
      fingerprint: fc.constantFrom('f1', 'f2', ''),
      metered: fc.integer({ min: 0, max: 9 }).map((x) => x < 3),
      // Three minutes (NOW is 30 s into one): the one before, NOW's and the next, in any order.
      at: fc.constantFrom(0, 40, 80, 29_900, 30_200, -30_200),
    }),
    { minLength: 2, maxLength: 30 },
  )

/** A raise as decide-proposal.lua leaves it: the raised value in the field, the base and the lapse in `raises`. */
function withRaise(h: Record<string, string | number>, r: RaiseSpec | undefined): void {
  if (!r) return
  const base = h[r.field]
  h[r.field] = r.value
  h.raises = JSON.stringify({ [r.field]: { value: r.value, ...(base === undefined ? {} : { base: String(base) }), lapses: NOW + r.lapses, by: 'prop_x' } })
}

/** The fleet as create-agent.lua and set-policy.lua leave it, under `keys`. */
async function seed(keys: Keys, f: Fleet): Promise<void> {
  const acct: Record<string, string | number> = { owner: hashToken(`owner-${ACCT}`), balance: f.balance }
  if (f.accountDailyCap !== null) acct.daily_cap = f.accountDailyCap
  if (f.thresholds !== null) acct.thresholds = f.thresholds
  withRaise(acct, f.accountRaise)
  await redis.hset(keys.account(ACCT), acct)
  for (const [i, a] of f.agents.entries()) {
    const h: Record<string, string | number> = {
      token: hashToken(`tok-${i}`), name: `worker ${i}`, created: NOW - 1_000, v: 1, state: a.killed ? 'killed' : 'active', spent_total: a.spent, depth: depthOf(f.agents, i),
    }
    if (a.parent !== null) Object.assign(h, { parent: agentId(a.parent), chain: chainOf(f.agents, i).map(agentId).join(',') })
    if (a.budget !== null) h.budget = a.budget
    if (a.dailyCap !== null) h.daily_cap = a.dailyCap
    if (a.perCallMax !== null) h.per_call_max = a.perCallMax
    if (a.allow !== null) h.allow = a.allow
    if (a.killed) h.kill_reason = 'operator'
    if (a.brkCredits !== null) h.brk_credits = a.brkCredits
    // What its children hold against it: their unspent budgets.
    const carved = f.agents.reduce((s, c) => (c.parent === i && c.budget !== null ? s + Math.max(0, c.budget - c.spent) : s), 0)
    if (carved > 0) h.carved = carved
    withRaise(h, a.raise)
    if (a.spentToday !== undefined) Object.assign(h, { day: windowsAt(NOW).day, day_spent: a.spentToday })
    await redis.hset(keys.agent(ACCT, agentId(i)), h)
  }
}

function argsOf(f: Fleet, c: CallSpec, n: number): DebitArgs {
  const now = NOW + c.at + n
  const w = windowsAt(now)
  const agent = c.who < 0 ? null : c.who
  return {
    now, accountId: ACCT, agentId: agent === null ? null : agentId(agent), chain: agent === null ? [] : chainOf(f.agents, agent).map(agentId),
    tokenHash: hashToken(agent === null ? `owner-${ACCT}` : `tok-${agent}`), target: c.metered ? 'proxy:llm/m1' : c.target, price: c.price, unpriced: false,
    callId: `call_m${c.resends ?? n}`, day: w.day, rateWindow: w.rate, prevRateWindow: w.prevRate, rateLimit: f.rateLimit, defaultDailyCap: 250,
    unpricedRequestCap: 100, fingerprint: c.fingerprint, dayKeyTtlS: 172_800, breakerCreditsPerMinute: 0, breakerIdenticalPerMinute: 4,
    lowBalanceAlert: 40, abandonAt: now + 60_000,
    ...(c.run && agent !== null ? { run: c.run } : {}),
    ...(c.metered ? { metered: { model: 'm1', inputBound: 2_000, input: 1_000, cachedInput: 100, output: 4_000, ceiling: null, maxOutput: 6_000, minOutput: 500 } } : {}),
    ...c.args,
  }
}

/**
 * Every key under `keys`' prefix (named without it) with its value and TTL; a stream as the entries
 * its readers get (parseOutboxEntry), without their stream ids (times): a batch writes its flat
 * debits as one `packed_debits` entry where the calls alone write one `packed_debit` each.
 */
async function state(keys: Keys): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {}
  let cursor = '0'
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${keys.prefix}:*`, 'COUNT', 1000)
    cursor = next
    for (const key of found) {
      const type = await redis.type(key)
      const value =
        type === 'hash' ? await redis.hgetall(key)
        : type === 'string' ? await redis.get(key)
        : type === 'zset' ? await redis.zrange(key, 0, -1, 'WITHSCORES')
        : type === 'stream' ? (await redis.xrange(key, '-', '+')).flatMap(([id, fields]) => parseOutboxEntry(id, fields).map((e) => e.fields))
        : type
      out[key.slice(keys.prefix.length)] = { value, ttl: (await redis.pttl(key)) > 0 }
    }
  } while (cursor !== '0')
  return out
}

/**
 * Runs `calls` twice from the same `fleet`: one plain script at a time, then all in one turn (one
 * EVALSHA of the batch wrapper); both must give the same replies and leave the same keys.
 */
async function sameEitherWay(fleet: Fleet, calls: CallSpec[], extra: Partial<DebitArgs> = {}): Promise<DebitReply[]> {
  const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
  const alone = ctxOf(`alone${run}`)
  const batched = ctxOf(`batch${run}`)
  lastBatch = batched.keys
  await seed(alone.keys, fleet)
  await seed(batched.keys, fleet)
  const one: DebitReply[] = []
  for (const [n, c] of calls.entries()) one.push(await runDebit(alone, { ...argsOf(fleet, c, n), ...extra }))
  await redis.config('RESETSTAT')
  const together = await Promise.all(calls.map((c, n) => runDebit(batched, { ...argsOf(fleet, c, n), ...extra })))
  const evalsha = /cmdstat_evalsha:calls=(\d+)/.exec(await redis.info('commandstats'))
  expect(Number(evalsha?.[1])).toBe(1)
  expect(together).toEqual(one)
  const left = await state(alone.keys)
  expect(await state(batched.keys)).toEqual(left)
  thresholdEvents += JSON.stringify(left).split('"cap.threshold"').length - 1
  return one
}
/** The keys of sameEitherWay's last batch. */
let lastBatch: Keys
/** The raw outbox entries of a batch's shard: kind, and for a packed one its number of debits. */
async function rawOutbox(keys: Keys): Promise<string[]> {
  const rows = await redis.xrange(keys.outbox(keys.shardOf(ACCT)), '-', '+')
  return rows.map(([, f]) => (f[1] === 'packed_debits' ? `packed_debits×${f[3]!.split('\n').length}` : f[1]!))
}
/** cap.threshold events the runs produced: the property must have weighed some crossings. */
let thresholdEvents = 0

describe('debit.lua in a batch', () => {
  test('a batch gives the replies and leaves the Redis that the same calls one at a time do (random fleets)', async () => {
    await fc.assert(
      fc.asyncProperty(fleetArb.chain((f) => fc.tuple(fc.constant(f), callsArb(f.agents.length))), async ([fleet, calls]) => {
        await sameEitherWay(fleet, calls)
      }),
      { numRuns: 120 },
    )
    expect(thresholdEvents).toBeGreaterThan(0)
  }, 120_000)

  test('calls that name run budgets: the same replies and Redis in a batch as one at a time (runs shared, spent up, ended, another agent\'s)', async () => {
    // A run opened in the batch, refused past its max, past its TTL (20 s: calls reach 30 s later)
    // or named by an agent outside its opener's line, as the calls happen to fall.
    const runs = [
      { id: 'r1', max: 25, ttlS: 3600, keptS: 600 },
      { id: 'r2', max: 60, ttlS: 20, keptS: 600 },
      { id: 'r3', max: 0, ttlS: 60, keptS: 600 },
    ]
    const withRuns = fleetArb.chain((f) =>
      fc.tuple(
        fc.constant(f),
        callsArb(f.agents.length).chain((cs) =>
          fc.tuple(fc.constant(cs), fc.array(fc.option(fc.constantFrom(...runs), { nil: undefined, freq: 4 }), { minLength: cs.length, maxLength: cs.length })),
        ),
      ),
    )
    let refused = 0
    await fc.assert(
      fc.asyncProperty(withRuns, async ([fleet, [calls, named]]) => {
        const replies = await sameEitherWay(fleet, calls.map((c, i) => ({ ...c, run: named[i] })))
        refused += replies.filter((r) => r.status === 'run_budget').length
        // Each admitted call's run, after it: within its max, and its spend grows by each call's price.
        const last = new Map<string, number>()
        for (const r of replies) {
          if (r.status !== 'ok' || !r.run) continue
          expect(r.run.spent).toBeLessThanOrEqual(r.run.max)
          expect(r.run.spent).toBe((last.get(r.run.id) ?? 0) + r.price)
          last.set(r.run.id, r.run.spent)
        }
      }),
      { numRuns: 80 },
    )
    // The property weighed refusals by runs, not only admissions.
    expect(refused).toBeGreaterThan(0)
  }, 120_000)

  test('temporary raises: the batch agrees with one at a time across each lapse, and from the lapse on the debit answers as with the base', async () => {
    // Lapses among the calls' instants (-30 200 .. 30 200 ms), so a batch straddles them.
    const lapses = fc.constantFrom(-40_000, 0, 41, 30_000, 60_000)
    const raiseOf = (field: RaiseSpec['field']) =>
      fc.record({
        field: fc.constant(field),
        value: field === 'allow' ? fc.constantFrom('a.*\nc.y', 'c.y', 'b.x') : fc.integer({ min: 0, max: 150 }).map(String),
        lapses,
      })
    const raised = fleetArb.chain((f) =>
      fc
        .record({
          agents: fc.tuple(...f.agents.map((a) => fc.option(fc.oneof(raiseOf('daily_cap'), raiseOf('allow'), ...(a.parent === null ? [raiseOf('budget')] : [])), { nil: undefined }))),
          account: fc.option(raiseOf('daily_cap'), { nil: undefined }),
        })
        .map(({ agents, account }) => ({ ...f, accountRaise: account, agents: f.agents.map((a, i) => ({ ...a, raise: agents[i] })) })),
    )
    await fc.assert(
      fc.asyncProperty(raised.chain((f) => fc.tuple(fc.constant(f), callsArb(f.agents.length))), async ([fleet, calls]) => {
        const one = await sameEitherWay(fleet, calls)
        // Every call at or after every lapse: the same replies as a fleet that never had a raise.
        const last = Math.max(...[fleet.accountRaise, ...fleet.agents.map((a) => a.raise)].map((r) => r?.lapses ?? -Infinity))
        if (calls.every((c) => c.at >= last)) {
          const base: Fleet = { ...fleet, accountRaise: undefined, agents: fleet.agents.map((a) => ({ ...a, raise: undefined })) }
          const ctx = ctxOf(`base${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`)
          await seed(ctx.keys, base)
          const plain: DebitReply[] = []
          for (const [n, c] of calls.entries()) plain.push(await runDebit(ctx, argsOf(base, c, n)))
          expect(one).toEqual(plain)
        }
      }),
      { numRuns: 120 },
    )
  }, 120_000)

  test('a minute\'s breaker counts written after a later minute\'s call read them as its previous one are read again', async () => {
    // The clock may step back inside one batch: the second call counts into the minute the first
    // read as its previous one; the last call must weigh that count and trip the breaker.
    const agent: AgentSpec = { parent: null, budget: null, spent: 0, dailyCap: null, perCallMax: null, allow: null, killed: false, brkCredits: null }
    const fleet: Fleet = { balance: 1_000, rateLimit: 1_000, accountDailyCap: null, thresholds: null, agents: [agent] }
    const call = (at: number): CallSpec => ({ who: 0, price: 1, target: 'a.x', fingerprint: 'f1', metered: false, at })
    const replies = await sameEitherWay(fleet, [call(30_200), call(0), call(40), call(30_200), call(30_200)], { breakerIdenticalPerMinute: 2 })
    expect(replies.map((r) => r.status)).toEqual(['ok', 'ok', 'ok', 'agent_killed', 'agent_killed'])
  })

  test("a sub-agent's calls of one batch leave each level's spend, day spend and carve as one at a time (written once, after the last call)", async () => {
    // The batch's last settle writes each level whose hash has nothing else deferred by its own HSET
    // (settle_levels in lua/debit.lua): with `day` on a level's first spend of the day, without it after.
    const level = (parent: number | null, budget: number, spent: number): AgentSpec => ({ parent, budget, spent, dailyCap: null, perCallMax: null, allow: null, killed: false, brkCredits: null })
    const fleet: Fleet = { balance: 1_000, rateLimit: 1_000, accountDailyCap: null, thresholds: null, agents: [level(null, 500, 10), level(0, 200, 10), level(1, 100, 10)] }
    const call = (who: number, price: number): CallSpec => ({ who, price, target: 'a.x', fingerprint: 'f1', metered: false, at: 0 })
    const replies = await sameEitherWay(fleet, [call(2, 5), call(2, 7), call(2, 3), call(2, 4)])
    expect(replies.map((r) => r.status)).toEqual(['ok', 'ok', 'ok', 'ok'])
    // Levels that spent today already: no `day` written.
    const today: Fleet = { ...fleet, agents: fleet.agents.map((a) => ({ ...a, spentToday: 4 })) }
    await sameEitherWay(today, [call(2, 5), call(2, 7), call(2, 3)])
    // A top-level agent (no carve to write), of either day.
    await sameEitherWay(today, [call(0, 5), call(0, 7)])
    await sameEitherWay(fleet, [call(0, 5), call(0, 7)])
  })

  test("an agent's breaker room: a call the room made earlier in the minute would pass is weighed exactly when the clock steps back", async () => {
    // The previous minute holds 4 identical requests (limit 6). A call weighs them by what is left of
    // it; later calls of the batch only take their count off the room the last weighing left, and a
    // call whose count takes it below 0 weighs exactly. The last call comes earlier in the minute
    // than that weighing: the previous minute weighs more there, so it must weigh exactly and trip
    // (3 + 5 > 6), where the room alone (2 − 1) would have let it pass.
    const agent: AgentSpec = { parent: null, budget: null, spent: 0, dailyCap: null, perCallMax: null, allow: null, killed: false, brkCredits: null }
    const fleet: Fleet = { balance: 1_000, rateLimit: 1_000, accountDailyCap: null, thresholds: null, agents: [agent] }
    const call = (at: number): CallSpec => ({ who: 0, price: 1, target: 'a.x', fingerprint: 'f1', metered: false, at })
    const previous = [-30_200, -30_150, -30_100, -30_050].map(call)
    const replies = await sameEitherWay(fleet, [...previous, call(-29_000), call(25_000), call(25_000), call(25_000), call(-29_000)], { breakerIdenticalPerMinute: 6 })
    expect(replies.map((r) => r.status)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'agent_killed'])
  })

  test("property: one agent's calls over two minutes, its clock going back and forth: the breaker trips in a batch where it trips one call at a time", async () => {
    // A batch weighs an agent's breaker exactly only when a call takes a rule's room below 0 or comes
    // earlier in the minute than the last weighing; here the rules are tight and the calls' instants
    // random over the minute before NOW's and NOW's, so both happen often.
    const agent: AgentSpec = { parent: null, budget: null, spent: 0, dailyCap: null, perCallMax: null, allow: null, killed: false, brkCredits: null }
    const fleet: Fleet = { balance: 10_000, rateLimit: 1_000, accountDailyCap: null, thresholds: null, agents: [agent] }
    const call = fc.record({
      who: fc.constant(0),
      price: fc.integer({ min: 0, max: 8 }),
      target: fc.constant('a.x'),
      fingerprint: fc.constantFrom('f1', 'f2', ''),
      metered: fc.constant(false),
      at: fc.integer({ min: -90_000, max: 29_999 }),
    })
    let trips = 0
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 6 }), fc.array(call, { minLength: 2, maxLength: 24 }), async (credits, same, calls) => {
        const replies = await sameEitherWay(fleet, calls, { breakerCreditsPerMinute: credits, breakerIdenticalPerMinute: same })
        if (replies.some((r) => r.status === 'agent_killed')) trips++
      }),
      { numRuns: 150 },
    )
    expect(trips).toBeGreaterThan(0)
  }, 120_000)

  test('a previous minute counted, not weighed, by a call of other breaker defaults is read again by the next call that weighs it', async () => {
    // The first call weighs its credits (3 a minute) in the minute after NOW's; the second, whose
    // defaults weigh only identical requests and which sends no fingerprint, counts its 3 credits into
    // NOW's minute (the first's previous one) without weighing; the third, of the first's arguments,
    // must weigh them: floor(3 × ~1) + 2 > 3 trips the breaker.
    const agent: AgentSpec = { parent: null, budget: null, spent: 0, dailyCap: null, perCallMax: null, allow: null, killed: false, brkCredits: null }
    const fleet: Fleet = { balance: 1_000, rateLimit: 1_000, accountDailyCap: null, thresholds: null, agents: [agent] }
    const weighs: Partial<DebitArgs> = { breakerCreditsPerMinute: 3, breakerIdenticalPerMinute: 0 }
    const calls: CallSpec[] = [
      { who: 0, price: 1, target: 'a.x', fingerprint: 'f1', metered: false, at: 30_000, args: weighs },
      { who: 0, price: 3, target: 'a.x', fingerprint: '', metered: false, at: 0, args: { breakerCreditsPerMinute: 0, breakerIdenticalPerMinute: 5 } },
      { who: 0, price: 1, target: 'a.x', fingerprint: 'f1', metered: false, at: 30_000, args: weighs },
    ]
    const replies = await sameEitherWay(fleet, calls)
    expect(replies.map((r) => r.status)).toEqual(['ok', 'ok', 'agent_killed'])
  })

  test('calls of a chain straddling the HKT midnight in one batch, back and forth: each level\'s day spend is of its call\'s day, as one at a time', async () => {
    // A batch sums an agent's debits and writes them into its levels once (settle_levels in
    // lua/debit.lua): a call of another day than the sum's must have the sum written first.
    const midnight = Date.UTC(2026, 10, 25, 16) - NOW   // 00:00 HKT, ms from NOW
    const level = (parent: number | null, dailyCap: number): AgentSpec => ({ parent, budget: 500, spent: 10, dailyCap, perCallMax: null, allow: null, killed: false, brkCredits: null })
    const fleet: Fleet = { balance: 1_000, rateLimit: 1_000, accountDailyCap: null, thresholds: null, agents: [level(null, 60), level(0, 40), level(1, 25)] }
    const call = (who: number, price: number, at: number): CallSpec => ({ who, price, target: 'a.x', fingerprint: '', metered: false, at: midnight + at })
    const replies = await sameEitherWay(fleet, [call(2, 5, -2_000), call(2, 6, -1_000), call(2, 7, 1_000), call(1, 4, 1_500), call(2, 8, -500), call(2, 9, 2_000), call(2, 10, 2_500), call(2, 7, 3_000)])
    // The call before midnight at -500 took its level's `day` back: the next day's spend starts again from 9.
    expect(replies.map((r) => r.status)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'ok', 'agent_daily_cap'])
  })

  test('a resent call id answers, in a batch, the account\'s day spend the calls before it left', async () => {
    // The day spend and the rate window are written after a batch's last call: a resent call's
    // answer must still count the debits made before it in the same batch.
    const fleet: Fleet = { balance: 1_000, rateLimit: 1_000, accountDailyCap: null, thresholds: null, agents: [] }
    const call = (price: number, resends?: number): CallSpec => ({ who: -1, price, target: 'a.x', fingerprint: '', metered: false, at: 0, ...(resends === undefined ? {} : { resends }) })
    const replies = await sameEitherWay(fleet, [call(3), call(4), call(3, 0), call(5), call(4, 1)])
    expect(replies.map((r) => (r.status === 'ok' ? r.spentToday : r.status))).toEqual([3, 7, 7, 12, 12])
  })

  test('a batch sent twice (ioredis resending it after a lost reply) debits once: the second answers as the calls resent one at a time', async () => {
    // The wrapper checks the batch's call records with one EXISTS and, when none exists, its calls
    // skip their own check: the resent batch must find them and answer each applied call as resent.
    const agent: AgentSpec = { parent: null, budget: 40, spent: 0, dailyCap: null, perCallMax: null, allow: null, killed: false, brkCredits: null }
    const fleet: Fleet = { balance: 100, rateLimit: 1_000, accountDailyCap: null, thresholds: null, agents: [agent] }
    const call = (who: number, price: number, metered = false): CallSpec => ({ who, price, target: 'a.x', fingerprint: 'f1', metered, at: 0 })
    // Debited, refused (the daily cap), debited by the agent, its metered reservation (27), debited.
    const calls = [call(-1, 3), call(-1, 500), call(0, 4), call(0, 0, true), call(-1, 5)]
    const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`
    const alone = ctxOf(`alone${run}`)
    await seed(alone.keys, fleet)
    for (const [n, c] of calls.entries()) await runDebit(alone, argsOf(fleet, c, n))
    const resent: DebitReply[] = []
    for (const [n, c] of calls.entries()) resent.push(await runDebit(alone, argsOf(fleet, c, n)))
    // Every script sent twice, the first reply lost (EVALSHA, or the EVAL after its NOSCRIPT).
    let sent = 0
    const twice = new Proxy(redis, {
      get(target, prop, receiver) {
        if (prop === 'evalsha' || prop === 'eval')
          return async (...a: unknown[]) => {
            const send = target[prop] as (...x: unknown[]) => Promise<unknown>
            await send.apply(target, a)
            sent++
            return send.apply(target, a)
          }
        return Reflect.get(target, prop, receiver)
      },
    })
    const batched = { ...ctxOf(`batch${run}`), redis: twice, scripts: loadScripts(twice as unknown as Redis, { wrappedFrom: 0 }) } as RedisContext
    await seed(batched.keys, fleet)
    const together = await Promise.all(calls.map((c, n) => runDebit(batched, argsOf(fleet, c, n))))
    expect(sent).toBe(1)
    expect(together).toEqual(resent)
    expect(together.map((r) => r.status)).toEqual(['ok', 'daily_cap', 'ok', 'ok', 'ok'])
    expect(await state(batched.keys)).toEqual(await state(alone.keys))
    expect(await redis.hget(batched.keys.account(ACCT), 'balance')).toBe(String(100 - 3 - 4 - 27 - 5))
  })

  test('a batch\'s flat debits are one outbox entry (packed_debits) whose entries are the plain calls\' own; one alone stays a packed_debit', async () => {
    const fleet: Fleet = { balance: 1_000, rateLimit: 1_000, accountDailyCap: null, thresholds: '', agents: [] }
    const call = (price: number, metered = false): CallSpec => ({ who: -1, price, target: price % 2 ? 'a.x' : 'b.x', fingerprint: '', metered, at: 0 })
    // sameEitherWay: the parsed entries (fields, order) equal the calls' one at a time.
    await sameEitherWay(fleet, [1, 2, 3, 4, 5, 6, 7, 8].map((p) => call(p)))
    expect(await rawOutbox(lastBatch)).toEqual(['packed_debits×8'])
    const [sid, raw] = (await redis.xrange(lastBatch.outbox(lastBatch.shardOf(ACCT)), '-', '+'))[0]!
    const parsed = parseOutboxEntry(sid, raw)
    expect(parsed.map((e) => [e.streamId, e.kind, e.fields.call, e.fields.amount, e.fields.bal])).toEqual(
      [1, 2, 3, 4, 5, 6, 7, 8].map((p, n) => [sid, 'debit', `call_m${n}`, `-${p}`, String(1_000 - (p * (p + 1)) / 2)]),
    )
    // A batch with one flat debit (the others metered: their entries are their settles') writes it as a plain call does.
    await sameEitherWay(fleet, [call(0, true), call(3), call(0, true), call(0, true)])
    expect(await rawOutbox(lastBatch)).toEqual(['packed_debit'])
  })

  test('an entry a call adds mid-batch (balance.low, a breaker trip) follows the debits made before it and precedes the later ones', async () => {
    // Price 10 from 100: the 7th call takes the balance under the alert (40, argsOf) — its event.
    const low: Fleet = { balance: 100, rateLimit: 1_000, accountDailyCap: null, thresholds: '', agents: [] }
    const owner = (price: number): CallSpec => ({ who: -1, price, target: 'a.x', fingerprint: '', metered: false, at: 0 })
    await sameEitherWay(low, Array.from({ length: 9 }, () => owner(10)))
    expect(await rawOutbox(lastBatch)).toEqual(['packed_debits×7', 'event', 'packed_debits×2'])
    // The agent's third call of 10 passes its breaker's 25 credits a minute: the agent's entry and
    // agent.killed after its two debits; the owner's debits after them in one entry.
    const agent: AgentSpec = { parent: null, budget: null, spent: 0, dailyCap: null, perCallMax: null, allow: null, killed: false, brkCredits: 25 }
    const brk: Fleet = { balance: 1_000, rateLimit: 1_000, accountDailyCap: null, thresholds: '', agents: [agent] }
    const mine = (): CallSpec => ({ who: 0, price: 10, target: 'a.x', fingerprint: '', metered: false, at: 0 })
    const replies = await sameEitherWay(brk, [owner(1), mine(), mine(), mine(), owner(2), mine(), owner(3)])
    expect(replies.map((r) => r.status)).toEqual(['ok', 'ok', 'ok', 'agent_killed', 'ok', 'agent_killed', 'ok'])
    expect(await rawOutbox(lastBatch)).toEqual(['packed_debits×3', 'agent', 'event', 'packed_debits×2'])
  })

  test('a batch of one depth-4 agent\'s calls reads the account, the agent and each ancestor once', async () => {
    const fleet: Fleet = {
      balance: 1_000_000,
      rateLimit: 1_000,
      accountDailyCap: null,
      thresholds: null,
      agents: [0, 1, 2, 3].map((i) => ({ parent: i === 0 ? null : i - 1, budget: 10_000 - i, spent: 0, dailyCap: null, perCallMax: null, allow: null, killed: false, brkCredits: null })),
    }
    const ctx = ctxOf(`reads${Date.now().toString(36)}`)
    await seed(ctx.keys, fleet)
    // No fingerprint: the breaker counts credits only (off by default), so it reads no previous minute.
    const calls: CallSpec[] = Array.from({ length: 8 }, () => ({ who: 3, price: 5, target: 'a.x', fingerprint: '', metered: false, at: 0 }))
    await runDebit(ctx, argsOf(fleet, calls[0]!, 100)) // the minute's first call sets its windows' expiries
    await redis.config('RESETSTAT')
    const rs = await Promise.all(calls.map((c, n) => runDebit(ctx, argsOf(fleet, c, 101 + n))))
    expect(rs.every((r) => r.status === 'ok')).toBe(true)
    const stats = await redis.info('commandstats')
    const calls_ = (cmd: string) => Number(new RegExp(`cmdstat_${cmd}:calls=(\\d+)`).exec(stats)?.[1] ?? 0)
    expect(calls_('evalsha')).toBe(1)
    // Once each: the account, the agent and its 3 ancestors (8 × 5 without the memo).
    expect(calls_('hmget')).toBe(5)
    // Each call writes its call record (a flat call's: one SET with its TTL); each level's hash, the
    // account's balance and the breaker window's credits are written once, after the batch's last
    // call; the in-flight set gets one ZADD for the batch.
    expect(calls_('set')).toBe(8)
    expect(calls_('hset')).toBe(4 + 1 + 1)
    expect(calls_('hincrby')).toBe(0)
    expect(calls_('zadd')).toBe(1)
    expect(Number(await redis.hget(ctx.keys.account(ACCT), 'balance'))).toBe(1_000_000 - 5 * 9)
    for (let i = 0; i < 4; i++) expect(Number(await redis.hget(ctx.keys.agent(ACCT, agentId(i)), 'spent_total'))).toBe(5 * 9)
  })
})
