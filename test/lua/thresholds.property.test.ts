/**
 * The threshold warnings' invariant (docs/api.md §13a), over random levels, caps and sequences of
 * debits and refunds: each level of each cap (the account's daily cap, the agent's daily cap, the
 * agent's budget) is told exactly once when the spend ever reached it through a debit, and never
 * otherwise — refunds that take the spend back under a level and debits that cross it again tell
 * nothing new, and a refused debit tells nothing. On a private redis-server.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import Redis from 'ioredis'
import { hashToken } from '../../src/auth/tokens'
import { windowsAt } from '../../src/windows'
import { runDebit } from '../../src/lua/debit'
import { runRefund } from '../../src/lua/refund'
import type { RedisContext } from '../../src/redis/context'
import { Keys } from '../../src/redis/keys'
import { loadScripts } from '../../src/redis/scripts'
import { startRedisServer, type RedisServer } from '../helpers/redis-server'

let server: RedisServer
let redis: Redis
let scripts: ReturnType<typeof loadScripts>
beforeAll(async () => {
  server = await startRedisServer()
  redis = new Redis(server.url)
  scripts = loadScripts(redis, { wrappedFrom: 0 })
})
afterAll(async () => {
  redis?.disconnect()
  await server?.stop()
})

const NOW = Date.UTC(2026, 10, 25, 4, 0, 0)
const ACCT = 'acc_07_thresholds'
const AGENT = 'agt_thr'

type Op = { kind: 'debit'; price: number } | { kind: 'refund'; nth: number }
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 60 }).map((price) => ({ kind: 'debit' as const, price })) },
  { weight: 1, arbitrary: fc.nat(50).map((nth) => ({ kind: 'refund' as const, nth })) },
)
const caseArb = fc.record({
  levels: fc.option(fc.uniqueArray(fc.integer({ min: 1, max: 100 }), { maxLength: 10 }), { nil: null }),
  accountCap: fc.integer({ min: 1, max: 400 }),
  agentCap: fc.integer({ min: 1, max: 400 }),
  budget: fc.integer({ min: 1, max: 400 }),
  ops: fc.array(opArb, { minLength: 1, maxLength: 40 }),
})

describe('cap.threshold events', () => {
  test('each level of each cap is told once iff a debit took the spend to it (random levels, caps, debits and refunds)', async () => {
    let run = 0
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ levels, accountCap, agentCap, budget, ops }) => {
        const keys = new Keys(`thr${Date.now().toString(36)}${++run}`)
        const ctx = { redis, keys, scripts } as unknown as RedisContext
        const acct: Record<string, string | number> = { owner: hashToken('owner'), balance: 1_000_000, daily_cap: accountCap }
        if (levels !== null) acct.thresholds = [...levels].sort((a, b) => a - b).join(',')
        await redis.hset(keys.account(ACCT), acct)
        await redis.hset(keys.agent(ACCT, AGENT), { token: hashToken('agent'), state: 'active', spent_total: 0, depth: 1, daily_cap: agentCap, budget })

        const w = windowsAt(NOW)
        const debited: string[] = []
        let spent = 0
        let most = 0
        for (const [n, op] of ops.entries()) {
          if (op.kind === 'debit') {
            const callId = `call_thr_${n}`
            const r = await runDebit(ctx, {
              now: NOW + n, accountId: ACCT, agentId: AGENT, chain: [], tokenHash: hashToken('agent'), target: 'a.x', price: op.price, unpriced: false,
              callId, day: w.day, rateWindow: w.rate, prevRateWindow: w.prevRate, rateLimit: 1_000_000, defaultDailyCap: 1_000, unpricedRequestCap: 100,
              dayKeyTtlS: 172_800, breakerCreditsPerMinute: 0, breakerIdenticalPerMinute: 0, lowBalanceAlert: 0, abandonAt: NOW + 60_000,
            })
            const fits = spent + op.price <= Math.min(accountCap, agentCap, budget)
            expect(r.status === 'ok').toBe(fits)
            if (r.status === 'ok') {
              spent += op.price
              most = Math.max(most, spent)
              if (op.price > 0) debited.push(callId)
            }
          } else if (debited.length > 0) {
            const callId = debited.splice(op.nth % debited.length, 1)[0]!
            const r = await runRefund(ctx, { now: NOW + n, accountId: ACCT, agentId: AGENT, callId, day: w.day, reason: 'provider_error', chain: [] })
            expect(r.status).toBe('ok')
            spent -= r.status === 'ok' ? r.amount : 0
          }
        }

        const told = (await redis.xrange(keys.outbox(keys.shardOf(ACCT)), '-', '+'))
          .map(([, f]) => Object.fromEntries(Array.from({ length: f.length / 2 }, (_, i) => [f[2 * i], f[2 * i + 1]])))
          .filter((e) => e.type === 'cap.threshold')
          .map((e) => JSON.parse(e.data!) as { scope: string; agent_id: string; cap_kind: string; percent: number; cap: number; spent: number })
        const expected: string[] = []
        const active = levels ?? [50, 80, 100]
        for (const [scope, cap] of [['account:daily_cap', accountCap], ['agent:daily_cap', agentCap], ['agent:budget', budget]] as const)
          for (const p of active) if (p * cap <= most * 100) expected.push(`${scope}:${p}`)
        expect(told.map((e) => `${e.scope}:${e.cap_kind}:${e.percent}`).sort()).toEqual(expected.sort())
        // Each event carries the cap, a spend at or past its level, and the agent (the caller, for the account's cap too).
        for (const e of told) {
          expect(e.spent * 100).toBeGreaterThanOrEqual(e.percent * e.cap)
          expect(e.agent_id).toBe(AGENT)
        }
      }),
      { numRuns: 150 },
    )
  }, 120_000)
})
