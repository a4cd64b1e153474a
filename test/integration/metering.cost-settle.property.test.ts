/**
 * Property (docs/api.md §7): the cost an answer shows is the figure the settle charges from. The
 * settle computes it in its script (settle.lua, from the prices the debit wrote on the call record);
 * the answer in metering/cost.ts from the prices the debit was given. For random prices (cache
 * writes included) and usage, a first call (remainder 0) is charged floor(cost / 1e6) credits and
 * keeps cost mod 1e6 as the remainder: charged × 1e6 + remainder = exactCostMicro, to the micro-credit.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import { exactCostMicro } from '../../src/metering/cost'
import { readAccount } from '../../src/redis/account-hash'
import { startTestApp, type TestApp } from '../helpers/harness'
import { openMeteredCall } from '../helpers/metering'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

const prices = fc
  .record({ input: fc.nat(10_000), cachedShare: fc.nat(100), writeExtra: fc.nat(10_000), hourExtra: fc.nat(10_000), output: fc.nat(10_000), writes: fc.boolean() })
  .map((p) => {
    const base = { input: p.input, cachedInput: Math.floor((p.input * p.cachedShare) / 100), output: p.output }
    if (!p.writes) return base
    const cacheWrite = p.input + p.writeExtra
    const cacheWrite1h = cacheWrite + p.hourExtra
    return { ...base, cacheWrite, cacheWrite1h, boundInput: cacheWrite1h }
  })
// Within the reservation (2,000 input tokens, 1,000 output): nothing is left uncharged.
const usage = fc
  .record({ input: fc.nat(500), cached: fc.nat(500), output: fc.nat(1000), cache_write: fc.nat(500), cache_write_1h: fc.nat(500) })
  .map((u) => (u.cache_write + u.cache_write_1h === 0 ? { input: u.input, cached: u.cached, output: u.output } : u))

test('a first call is charged from exactly the cost its answer shows', async () => {
  await fc.assert(
    fc.asyncProperty(prices, usage, async (p, u) => {
      const tokens = 'cache_write' in p ? u : { input: u.input, cached: u.cached, output: u.output }
      const a = await t.signup()
      const principal = (await t.s.guard.tokens.resolve(a.token))!
      const call = await openMeteredCall(t.s, principal, p, { inputBound: 2000 })
      const settled = await call.settle('ok', { usage: { tokens, source: 'provider' } })
      const r = Number((await readAccount(t.s.ctx, a.account_id, 'mc_rem')).mc_rem ?? 0)
      expect(settled.charged * 1e6 + r).toBe(exactCostMicro(tokens, p))
    }),
    { numRuns: 60 },
  )
})
