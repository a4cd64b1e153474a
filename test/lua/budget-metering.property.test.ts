/**
 * Where sub-agent budgets (docs/api.md §8) meet metered calls (docs/api.md §7): a reservation counts along
 * the agent's chain (debit.lua), its settle (settle.lua) or refund (refund.lua) gives back what was not
 * charged along the same chain, off every cap window of the debit's HKT day, and each ancestor's
 * `carved` follows its children's unspent budgets. This drives the scripts directly through random
 * trees (depth ≤ 4, random budgets and daily caps per level) and random interleavings of flat
 * debits, metered reservations (random ceilings, or the script's clamp), settles (usage below or
 * past the reservation), refunds, kills, revives, revokes, expiries and clock steps across the HKT
 * midnight. After every step (and release-expired.lua, what a create runs first) it recomputes from
 * the calls made:
 * - each level's spent_total = Σ its subtree's live amounts (open: the reservation or price;
 *   settled: the charge; refunded: 0), never past its budget;
 * - each level's day_spent = the same sum over the calls debited on the level's `day`, never past
 *   its daily cap; the account's spend of each day likewise;
 * - balance ≥ 0, held = Σ open reservations, balance + held = the posted balance its entries sum
 *   to (the outbox, read through the one parser), and each settle charges
 *   min(floor((r + cost) / 1e6), reservation) with the remainder r carried;
 * - each live parent's carved = Σ max(0, budget − spent_total) over its live, unexpired children.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { hashToken } from '../../src/auth/tokens'
import { nextHktMidnight } from '../../src/clock'
import { newAccountId } from '../../src/ledger/accounts'
import { parseOutboxEntry } from '../../src/write-behind/outbox'
import { windowsAt } from '../../src/windows'
import { runAgentState, runCreateAgent, runReleaseExpired } from '../../src/lua/agents'
import { runDebit, type DebitMetering } from '../../src/lua/debit'
import { runRefund } from '../../src/lua/refund'
import { runSettle } from '../../src/lua/settle'
import { scriptRig } from '../helpers/script-rig'

const { redis, keys, ctx } = scriptRig('bmeter')

// 2027-01-15 15:59:00 UTC: a minute before 00:00 HKT.
const T0 = Date.UTC(2027, 0, 15, 15, 59, 0)
const MICRO = 1_000_000
let seq = 0

interface Agent {
  id: string
  /** Its ancestors, parent first. */
  chain: string[]
}

interface Call {
  id: string
  agent: Agent
  day: number
  at: number
  metered: boolean
  prices?: { input: number; cached: number; output: number }
  /** What the call counts now: the reservation (or flat price) while open, the charge once settled, 0 once refunded. */
  amount: number
  open: boolean
}

const lineage = (c: Call) => [c.agent.id, ...c.agent.chain]

async function create(acct: string, now: number, parent: Agent | null, budget: number | null, dailyCap: number | null, ttlMs: number | null) {
  const id = `agt_bmeter${String(++seq).padStart(16, '0')}`
  const chain = parent ? [parent.id, ...parent.chain] : []
  const reply = await runCreateAgent(ctx, {
    now, accountId: acct, agentId: id, tokenHash: hashToken(id), name: id, maxAgents: 1000,
    dailyCap, allow: null, perCallMax: null, chain, budget, ttlMs, maxDepth: 4, via: 'api',
  })
  return { agent: { id, chain }, reply }
}

async function debit(acct: string, now: number, a: Agent, price: number, metered?: DebitMetering) {
  const w = windowsAt(now)
  const callId = `call_bmeter_${++seq}`
  const r = await runDebit(ctx, {
    now, accountId: acct, agentId: a.id, chain: a.chain, tokenHash: hashToken(a.id), target: metered ? 'proxy:openai' : 'test.search',
    price, unpriced: false, callId, day: w.day, rateWindow: w.rate, prevRateWindow: w.prevRate, rateLimit: 1_000_000,
    defaultDailyCap: 1_000_000_000, unpricedRequestCap: 1_000, fingerprint: `fp${seq}`, dayKeyTtlS: 172_800,
    breakerCreditsPerMinute: 0, breakerIdenticalPerMinute: 0, lowBalanceAlert: 0, abandonAt: now + 3_600_000, metered,
  })
  if (r.status !== 'ok') return null
  const call: Call = {
    id: callId, agent: a, day: w.day, at: now, metered: !!metered, amount: r.price, open: true,
    prices: metered && { input: metered.input, cached: metered.cachedInput, output: metered.output },
  }
  return call
}

/** Every invariant of the header, from Redis against the calls made. */
async function expectExact(acct: string, b0: number, agents: Agent[], calls: Call[], r: number, now: number, outboxSum: number) {
  const rows = new Map<string, Record<string, string>>()
  for (const a of agents) rows.set(a.id, await redis.hgetall(keys.agent(acct, a.id)))
  const [balance, held] = (await redis.hmget(keys.account(acct), 'balance', 'held', 'mc_rem')).map((v) => Number(v ?? 0))
  const counted = calls.reduce((s, c) => s + c.amount, 0)
  const heldWant = calls.filter((c) => c.open && c.metered).reduce((s, c) => s + c.amount, 0)
  expect({ balance, held }).toEqual({ balance: b0 - counted, held: heldWant })
  expect(balance!).toBeGreaterThanOrEqual(0)
  expect(balance! + held!).toBe(b0 + outboxSum)
  expect(Number((await redis.hget(keys.account(acct), 'mc_rem')) ?? 0)).toBe(r)
  for (const day of new Set(calls.map((c) => c.day))) {
    const want = calls.filter((c) => c.day === day).reduce((s, c) => s + c.amount, 0)
    expect({ day, spent: Number((await redis.get(keys.spentToday(acct, day))) ?? 0) }).toEqual({ day, spent: want })
  }
  for (const a of agents) {
    const row = rows.get(a.id)!
    const mine = calls.filter((c) => lineage(c).includes(a.id))
    const spent = Number(row.spent_total ?? 0)
    const day = row.day === undefined ? null : Number(row.day)
    const daySpent = Number(row.day_spent ?? 0)
    expect({ agent: a.id, spent, daySpent }).toEqual({
      agent: a.id,
      spent: mine.reduce((s, c) => s + c.amount, 0),
      daySpent: mine.filter((c) => c.day === day).reduce((s, c) => s + c.amount, 0),
    })
    if (row.budget !== undefined) expect(spent).toBeLessThanOrEqual(Number(row.budget))
    if (row.daily_cap !== undefined) expect(daySpent).toBeLessThanOrEqual(Number(row.daily_cap))
  }
  // Carves: every live parent's against its live, unexpired children.
  const revokedLine = (a: Agent) => [a.id, ...a.chain].some((id) => rows.get(id)?.state === 'revoked')
  for (const p of agents) {
    if (revokedLine(p)) continue
    let expected = 0
    for (const c of agents) {
      if (c.chain[0] !== p.id) continue
      const row = rows.get(c.id)!
      const expired = row.expires !== undefined && Number(row.expires) <= now
      if (row.state === 'revoked' || expired || row.budget === undefined) continue
      expected += Math.max(0, Number(row.budget) - Number(row.spent_total ?? 0))
    }
    expect({ agent: p.id, carved: Number(rows.get(p.id)!.carved ?? 0) }).toEqual({ agent: p.id, carved: expected })
  }
}

const createOp = fc.record({ kind: fc.constant('create' as const), parent: fc.nat(40), budgetPct: fc.integer({ min: 0, max: 105 }), capPct: fc.option(fc.integer({ min: 0, max: 100 }), { freq: 3 }), ttl: fc.option(fc.integer({ min: 1, max: 120_000 }), { freq: 3 }) })
const op = fc.oneof(
  { weight: 3, arbitrary: createOp },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('flat' as const), target: fc.nat(40), price: fc.integer({ min: 0, max: 60 }) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('reserve' as const), target: fc.nat(40), inputBound: fc.integer({ min: 0, max: 3_000 }),
      input: fc.integer({ min: 1, max: 2_000 }), cachedOf: fc.integer({ min: 0, max: 100 }), output: fc.integer({ min: 1, max: 20_000 }),
      ceiling: fc.option(fc.integer({ min: 1, max: 3_000 })), maxOutput: fc.integer({ min: 1, max: 4_000 }), minOutput: fc.integer({ min: 1, max: 32 }),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('settle' as const), call: fc.nat(40), input: fc.nat(4_000), cached: fc.nat(2_000), output: fc.nat(6_000),
      source: fc.constantFrom('provider' as const, 'estimated' as const),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('refund' as const), call: fc.nat(40) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('kill' as const, 'revive' as const, 'revoke' as const), target: fc.nat(40) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 1, max: 90_000 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('midnight' as const), offset: fc.integer({ min: -30_000, max: 30_000 }) }) },
)

describe('sub-agent budgets meet metered calls', () => {
  test('property: reservations, settles, refunds, flat debits, state changes, expiries and midnights keep every window, budget, carve and the ledger exact', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 5_000 }),
        fc.integer({ min: 0, max: 1_500 }),
        fc.option(fc.integer({ min: 0, max: 600 }), { freq: 3 }),
        fc.array(createOp, { maxLength: 6 }),
        fc.array(op, { minLength: 1, maxLength: 40 }),
        async (b0, rootBudget, rootCap, tree, ops) => {
          const acct = newAccountId(null)
          await redis.hset(keys.account(acct), { owner: hashToken(`owner-${acct}`), balance: b0 })
          const outbox = keys.outbox(keys.shardOf(acct))
          let last = (await redis.xrevrange(outbox, '+', '-', 'COUNT', 1))[0]?.[0] ?? '0-0'
          let outboxSum = 0
          const agents: Agent[] = []
          const calls: Call[] = []
          let now = T0
          let r = 0
          const root = await create(acct, now, null, rootBudget, rootCap, null)
          expect(root.reply.status).toBe('ok')
          agents.push(root.agent)
          // A tree first (then more creates among the steps), so that calls come from every depth.
          for (const [n, o] of [...tree.map((o) => [0, o] as const), ...ops.map((o) => [1, o] as const)]) {
            // Half the picks go to the newest agents (the deepest levels), half anywhere.
            const pick = (n: number) => (n % 2 ? agents[agents.length - 1 - ((n >> 1) % Math.min(3, agents.length))]! : agents[(n >> 1) % agents.length]!)
            const open = () => calls.filter((c) => c.open)
            if (o.kind === 'wait') now += o.ms
            else if (o.kind === 'midnight') now = Math.max(now + 1, nextHktMidnight(now) + o.offset)
            else if (o.kind === 'create') {
              // Mostly under the newest agent (deep trees), a share of what the parent may still carve.
              const parent = o.parent % 3 ? agents[agents.length - 1]! : pick(o.parent)
              if (parent.chain.length >= 3) continue
              const [budget, spent, carved, cap] = (await redis.hmget(keys.agent(acct, parent.id), 'budget', 'spent_total', 'carved', 'daily_cap')).map(Number)
              const left = Math.max(0, budget! - spent! - carved!)
              const childCap = o.capPct === null ? null : Math.floor(((Number.isNaN(cap) ? 300 : cap!) * o.capPct) / 100)
              const a = await create(acct, now, parent, Math.ceil((left * o.budgetPct) / 100), childCap, o.ttl)
              if (a.reply.status === 'ok') agents.push(a.agent)
            } else if (o.kind === 'flat') {
              const c = await debit(acct, now, pick(o.target), o.price)
              if (c) calls.push(c)
            } else if (o.kind === 'reserve') {
              const m: DebitMetering = {
                model: 'm', inputBound: o.inputBound, input: o.input, cachedInput: Math.floor((o.input * o.cachedOf) / 100), output: o.output,
                ceiling: o.ceiling, maxOutput: o.maxOutput, minOutput: o.minOutput,
              }
              const c = await debit(acct, now, pick(o.target), 0, m)
              if (c) calls.push(c)
            } else if (o.kind === 'settle') {
              const c = open().filter((x) => x.metered)[o.call % Math.max(1, open().filter((x) => x.metered).length)]
              if (!c) continue
              const reply = await runSettle(ctx, {
                now, accountId: acct, agentId: c.agent.id, callId: c.id, day: c.day, chain: c.agent.chain, at: c.at,
                tokens: { input: o.input, cached: o.cached, output: o.output }, source: o.source,
              })
              const cost = o.input * c.prices!.input + o.cached * c.prices!.cached + o.output * c.prices!.output
              let charged = Math.floor((r + cost) / MICRO)
              if (charged > c.amount) charged = c.amount
              else r = r + cost - charged * MICRO
              expect(reply).toMatchObject({ status: 'ok', charged, released: c.amount - charged })
              c.amount = charged
              c.open = false
            } else if (o.kind === 'refund') {
              const c = open()[o.call % Math.max(1, open().length)]
              if (!c) continue
              const reply = await runRefund(ctx, { now, accountId: acct, agentId: c.agent.id, callId: c.id, day: c.day, reason: 'provider_error', chain: c.agent.chain, at: c.at })
              expect(reply).toMatchObject({ status: 'ok', amount: c.amount })
              c.amount = 0
              c.open = false
            } else {
              const a = pick(o.target)
              await runAgentState(ctx, { now, accountId: acct, agentId: a.id, action: o.kind, via: 'api', parentId: a.chain[0] ?? null, actorId: null })
            }
            for (const [id, raw] of await redis.xrange(outbox, `(${last}`, '+')) {
              last = id
              for (const e of parseOutboxEntry(id, raw)) {
                if ((e.kind === 'debit' || e.kind === 'refund') && e.fields.acct === acct) outboxSum += Number(e.fields.amount)
              }
            }
            if (n === 0) continue
            await runReleaseExpired(ctx, acct, now)
            await expectExact(acct, b0, agents, calls, r, now, outboxSum)
          }
        },
      ),
      { numRuns: 600 },
    )
  }, 120_000)
})
