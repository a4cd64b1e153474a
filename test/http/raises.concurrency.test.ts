/**
 * Temporary raises racing each other and the owner's own changes (docs/api.md §13b): approvals for a
 * time, lasting approvals and PUT /v1/policies of the same daily cap, fired at once in random mixes.
 * Each is one script, so they serialise in Redis in some order; whatever the order, once every raise
 * has lapsed the cap is the original or a lasting value (a PUT's, a lasting approval's) — never a
 * temporary one — and while a raise stands its base is never another raise's value.
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

const NOON = (hktDay(Date.now()) + 2) * 86400_000 - 8 * 3600_000 + 12 * 3600_000
const ORIGINAL = 7

type Op = { kind: 'temporary'; forS: number } | { kind: 'lasting' } | { kind: 'put' }

test('whatever the order, no temporary value outlives its lapse', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.oneof(fc.record({ kind: fc.constant('temporary' as const), forS: fc.integer({ min: 60, max: 600 }) }), fc.constant({ kind: 'lasting' as const }), fc.constant({ kind: 'put' as const })), {
        minLength: 2,
        maxLength: 6,
      }),
      async (ops: Op[]) => {
        t.clock.set(NOON)
        const o = await t.signup()
        const a = (await t.req('POST', '/v1/agents', { token: o.token, body: { name: 'w', daily_cap: ORIGINAL } })).body
        // Distinct values: 1000s temporary, 2000s a PUT, 3000s a lasting approval.
        const valueOf = (op: Op, i: number) => (op.kind === 'temporary' ? 1000 : op.kind === 'put' ? 2000 : 3000) + i
        const ids = await Promise.all(
          ops.map(async (op, i) =>
            op.kind === 'put'
              ? null
              : (await t.req('POST', '/v1/proposals', { token: o.token, body: { kind: 'raise_daily_cap', value: valueOf(op, i), agent_id: a.id, reason: 'r' } })).body.id as string,
          ),
        )
        const replies = await Promise.all(
          ops.map((op, i) =>
            op.kind === 'put'
              ? t.req('PUT', '/v1/policies', { token: o.token, body: { agents: { [a.id]: { daily_cap: valueOf(op, i) } } } })
              : t.req('POST', `/v1/proposals/${ids[i]}/approve`, { token: o.token, body: op.kind === 'temporary' ? { for_s: op.forS } : undefined }),
          ),
        )
        for (const r of replies) expect(r.status).toBe(200)
        const lasting = new Set([ORIGINAL, ...ops.map((op, i) => (op.kind === 'temporary' ? null : valueOf(op, i))).filter((v) => v !== null)])

        const during = (await t.req('GET', '/v1/policies', { token: o.token })).body.agents[a.id]
        if (during.raised) expect(lasting.has(during.raised.daily_cap.base)).toBe(true)
        else expect(lasting.has(during.daily_cap)).toBe(true)

        t.clock.set(NOON + 600_000)
        const after = (await t.req('GET', '/v1/policies', { token: o.token })).body.agents[a.id]
        expect(after.raised).toBeUndefined()
        expect(lasting.has(after.daily_cap)).toBe(true)
        // A later write of the hash folds the lapsed raises back: the stored cap is the one in force.
        await t.req('PUT', '/v1/policies', { token: o.token, body: { agents: { [a.id]: { per_call_max: 1 } } } })
        const key = t.s.ctx.keys.agent(o.account_id, a.id)
        expect(await t.redis.hmget(key, 'daily_cap', 'raises')).toEqual([String(after.daily_cap), null])
      },
    ),
    { numRuns: 25 },
  )
})
