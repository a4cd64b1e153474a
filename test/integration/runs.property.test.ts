/**
 * Run budgets (docs/api.md §13c) as a fast-check property over random concurrent paid calls of
 * two agents (a parent and its child) under a few runs: flat calls kept or refunded, metered calls
 * settled below their reservation. Whatever the order, each run ends with `spent` = Σ what its
 * admitted calls were charged, never past its max while the calls run (atomic snapshots), the
 * run's refusals are the run's own, and the account lost exactly Σ charged.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { ApiError } from '../../src/errors'
import { openPaidCall } from '../../src/paid-request'
import { startTestApp, type TestApp } from '../helpers/harness'
import { redisBalance } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

const RUNS = ['r1', 'r2', 'r3'] as const
const opArb = fc.record({
  who: fc.constantFrom(0, 1),
  run: fc.constantFrom(...RUNS),
  kind: fc.constantFrom('kept', 'refunded', 'metered'),
  price: fc.integer({ min: 0, max: 9 }),
  output: fc.integer({ min: 0, max: 4_000 }),
})
const caseArb = fc.record({
  maxes: fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 40 })),
  ops: fc.array(opArb, { minLength: 5, maxLength: 30 }),
})

describe('run budgets, property', () => {
  test('each run ends at Σ charged of its calls, never past its max; the account lost Σ charged', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ maxes, ops }) => {
        const owner = await t.signup()
        const parent = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'p', budget: 10_000 } })).body
        const child = (await t.req('POST', '/v1/agents', { token: parent.token, body: { name: 'c', budget: 5_000 } })).body
        const principals = [await t.s.guard.tokens.resolve(parent.token), await t.s.guard.tokens.resolve(child.token)]
        // The parent opens every run first (its descendants may spend from it), with nothing charged.
        const maxOf = (run: string) => maxes[RUNS.indexOf(run as (typeof RUNS)[number])]!
        for (const run of RUNS) {
          const o = await openPaidCall(t.s, { principal: principals[0]!, target: 'test.free', price: 0, unpriced: true, run: { id: run, max: maxOf(run), ttlS: 3600 } })
          if (o.kind === 'debited') await o.call.settle('ok')
        }
        const before = await redisBalance(t, owner.account_id)
        const charged = new Map<string, number>(RUNS.map((r) => [r, 0]))
        let over = ''
        let sampling = true
        const sampler = (async () => {
          while (sampling) {
            const spent = await Promise.all(RUNS.map((r) => t.redis.hget(t.s.ctx.keys.run(owner.account_id, r), 'spent')))
            spent.forEach((s, i) => {
              if (Number(s) > maxes[i]!) over = `${RUNS[i]} spent ${s} > ${maxes[i]}`
            })
            await Bun.sleep(0)
          }
        })()
        await Promise.all(
          ops.map(async (op) => {
            const principal = principals[op.who]!
            const run = { id: op.run, max: 1_000_000, ttlS: 3600 }
            try {
              const opened = await openPaidCall(
                t.s,
                op.kind === 'metered'
                  ? { principal, target: 'proxy:openai/m', price: 0, unpriced: false, lease: true, run, metered: { model: 'm', inputBound: 1_000, input: 1_000, cachedInput: 100, output: 2_000, ceiling: 4_000, maxOutput: 4_000, minOutput: 1 } }
                  : { principal, target: 'test.echo', price: op.price, unpriced: false, run },
              )
              if (opened.kind !== 'debited') throw new Error('replay')
              const s =
                op.kind === 'refunded'
                  ? await opened.call.settle('provider_error')
                  : await opened.call.settle('ok', op.kind === 'metered' ? { usage: { tokens: { input: 1_000, cached: 0, output: op.output }, source: 'provider' } } : {})
              charged.set(op.run, charged.get(op.run)! + s.charged)
            } catch (e) {
              // Only the run refuses here: the budgets, caps and balance are far away.
              if (!(e instanceof ApiError) || e.context.rule !== 'run_budget' || e.context.run_id !== op.run) throw e
            }
          }),
        )
        sampling = false
        await sampler
        expect(over).toBe('')
        const listed = Object.fromEntries(((await t.req('GET', '/v1/runs', { token: owner.token })).body.runs as any[]).map((r) => [r.id, r]))
        for (const run of RUNS) {
          expect(listed[run]).toMatchObject({ agent_id: parent.id, max: maxOf(run), spent: charged.get(run) })
        }
        const total = [...charged.values()].reduce((a, b) => a + b, 0)
        expect(await redisBalance(t, owner.account_id)).toBe(before - total)
      }),
      { numRuns: 25 },
    )
  }, 120_000)
})
