/**
 * The temporary raise's promise (docs/api.md §13b), over random approvals, lapses and concurrent
 * calls through HTTP: within the raise every call the raised limit leaves room for is admitted, and
 * from the lapse on no call passes the original limit — with nothing written at the lapse. The
 * limit raised is, at random, an agent's daily cap, the account's, a parent's (its sub-agent calls:
 * the ancestor's row of the debit) or a top-level agent's budget; one to three raises of it are
 * approved one after another (a later one keeps the first base); the calls come in bursts of
 * concurrent requests at one instant each, on both sides of each lapse.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import { startTestApp, type TestApp } from '../helpers/harness'
import { hktDay } from '../../src/clock'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

const DAY = 86400_000
// Noon HKT two days on: every lapse below falls in the same HKT day (the daily caps' window).
const NOON = (hktDay(Date.now()) + 2) * DAY - 8 * 3600_000 + 12 * 3600_000

type Level = 'agent' | 'account' | 'parent' | 'budget'

interface Scenario {
  level: Level
  base: number
  /** Each approval: its value above the base, its duration, and when it is approved (s after noon). */
  raises: { above: number; forS: number; at: number }[]
  /** Bursts of concurrent calls: when (s after noon) and how many. */
  bursts: { at: number; n: number }[]
}

const scenario = fc.record({
  level: fc.constantFrom<Level>('agent', 'account', 'parent', 'budget'),
  base: fc.integer({ min: 0, max: 5 }),
  raises: fc.array(fc.record({ above: fc.integer({ min: 1, max: 8 }), forS: fc.integer({ min: 60, max: 400 }), at: fc.integer({ min: 0, max: 300 }) }), {
    minLength: 1,
    maxLength: 3,
  }),
  bursts: fc.array(fc.record({ at: fc.integer({ min: 0, max: 800 }), n: fc.integer({ min: 1, max: 6 }) }), { minLength: 1, maxLength: 6 }),
})

const call = (token: string) => t.req('POST', '/v1/call/test.cheap', { token, body: { q: `q${Math.random()}` } })

/** The account, the caller, and the way to propose the raise of the chosen limit to `value`. */
async function setUp(s: Scenario) {
  const o = await t.signup()
  const mk = async (body: Record<string, unknown>, token = o.token) => {
    const r = await t.req('POST', '/v1/agents', { token, body: { name: 'a', ...body } })
    expect(r.status).toBe(201)
    return r.body as { id: string; token: string }
  }
  let caller: { token: string }
  let ask: (value: number) => Record<string, unknown>
  if (s.level === 'agent') {
    const a = await mk({ daily_cap: s.base })
    caller = a
    ask = (value) => ({ kind: 'raise_daily_cap', value, agent_id: a.id })
  } else if (s.level === 'account') {
    await t.req('PUT', '/v1/policies', { token: o.token, body: { account: { daily_cap: s.base } } })
    caller = await mk({})
    ask = (value) => ({ kind: 'raise_daily_cap', value })
  } else if (s.level === 'parent') {
    const p = await mk({ daily_cap: s.base, budget: 1000 })
    caller = await mk({ budget: 100 }, p.token)
    ask = (value) => ({ kind: 'raise_daily_cap', value, agent_id: p.id })
  } else {
    const a = await mk({ budget: s.base })
    caller = a
    ask = (value) => ({ kind: 'raise_budget', value, agent_id: a.id })
  }
  return { owner: o.token, caller: caller.token, ask }
}

test('no call past the original limit after the lapse, none refused within the raise', async () => {
  await fc.assert(
    fc.asyncProperty(scenario, async (s) => {
      t.clock.set(NOON)
      const { owner, caller, ask } = await setUp(s)
      // Events in time order: approvals first at an equal instant.
      type Step = { at: number; raise?: Scenario['raises'][number]; burst?: Scenario['bursts'][number] }
      const events: Step[] = [
        ...s.raises.map((r) => ({ at: r.at, raise: r })),
        ...s.bursts.map((b) => ({ at: b.at, burst: b })),
      ]
      events.sort((x, y) => x.at - y.at || (x.raise ? -1 : 1))
      let spent = 0
      let limit = s.base
      let lapses = -1   // ms after noon; the raise in force until then
      for (const e of events) {
        t.clock.set(NOON + e.at * 1000)
        const now = e.at * 1000
        if (e.raise) {
          const value = s.base + e.raise.above
          const made = await t.req('POST', '/v1/proposals', { token: owner, body: { ...ask(value), reason: 'a burst of work' } })
          expect(made.status).toBe(201)
          const ok = await t.req('POST', `/v1/proposals/${made.body.id}/approve`, { token: owner, body: { for_s: e.raise.forS } })
          expect(ok.status).toBe(200)
          expect(ok.body.lapses_at).toBe(new Date(NOON + now + e.raise.forS * 1000).toISOString())
          limit = value
          lapses = now + e.raise.forS * 1000
          continue
        }
        const inForce = now < lapses ? limit : s.base
        const replies = await Promise.all(Array.from({ length: e.burst!.n }, () => call(caller)))
        const admitted = replies.filter((r) => r.status === 200).length
        // Every refusal is the raised limit's, never anything else.
        for (const r of replies.filter((r) => r.status !== 200)) {
          const rule = s.level === 'account' ? r.body.error : r.body.rule
          expect(rule).toBe(s.level === 'account' ? 'DAILY_CAP_REACHED' : s.level === 'budget' ? 'agent_budget' : 'agent_daily_cap')
        }
        expect({ at: e.at, inForce, spent, admitted }).toEqual({ at: e.at, inForce, spent, admitted: Math.max(0, Math.min(e.burst!.n, inForce - spent)) })
        spent += admitted
      }
    }),
    { numRuns: 30 },
  )
})
