/**
 * Property (docs/api.md §7): over random prices and random token counts, a sequence of metered calls
 * (debit.lua reserves, settle.lua charges) charges exactly what the usage cost, to the micro-credit:
 *   Σ charged × 1e6 + final remainder = Σ exact costs   (usage within the reservation)
 * with 0 ≤ remainder < 1e6, each charge ≤ its reservation, and the balance = 500 − Σ charged =
 * Σ of the account's ledger entries, in Redis and after the flush in Postgres.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import { openPaidCall } from '../../src/paid-request'
import { readAccount } from '../../src/redis/account-hash'
import { startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, flushAll, pgLedger, redisBalance } from '../helpers/ledger'
import { openMeteredCall, tokenPrices } from '../helpers/metering'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

const price = tokenPrices()
const usage = fc.record({ input: fc.nat(1000), cached: fc.nat(1000), output: fc.nat(1000) })

type Prices = { input: number; cachedInput: number; output: number; boundInput?: number; cacheWrite?: number; cacheWrite1h?: number }
type Usage = { input: number; cached: number; output: number; cache_write?: number; cache_write_1h?: number }

/** The exact cost in micro-credits, written independently of the script (docs/metering.md). */
const exactCost = (p: Prices, u: Usage) =>
  u.input * p.input + u.cached * p.cachedInput + u.output * p.output + (u.cache_write ?? 0) * (p.cacheWrite ?? p.input) + (u.cache_write_1h ?? 0) * (p.cacheWrite1h ?? p.cacheWrite ?? p.input)

/**
 * One account's calls, each reserved for 2,000 input tokens and 1,000 output (which bound the
 * usage: nothing is left uncharged) and settled with its usage: Σ charged × 1e6 + r = Σ exact
 * costs after every call, 0 ≤ r < 1e6, each charge within its reservation, and the balance the
 * ledger's sum in Redis and, after the flush, in Postgres.
 */
async function chargesExactly(p: Prices, calls: Usage[]) {
  const a = await t.signup()
  const principal = (await t.s.guard.tokens.resolve(a.token))!
  let sumCost = 0
  let sumCharged = 0
  for (const u of calls) {
    const call = await openMeteredCall(t.s, principal, p, { inputBound: 2000 })
    expect(call.price).toBe(Math.ceil((2000 * (p.boundInput ?? p.input) + 1000 * p.output) / 1e6) + 1)
    const s = await call.settle('ok', { usage: { tokens: u, source: 'provider' } })
    expect(s.charged).toBeLessThanOrEqual(call.price)
    sumCost += exactCost(p, u)
    sumCharged += s.charged
    const r = (await readAccount(t.s.ctx, a.account_id, 'mc_rem')).mc_rem ?? 0
    expect(r).toBeGreaterThanOrEqual(0)
    expect(r).toBeLessThan(1e6)
    expect(sumCharged * 1e6 + r).toBe(sumCost)
  }
  expect(await redisBalance(t, a.account_id)).toBe(500 - sumCharged)
  const entries = await checkRedisInvariant(t, a.account_id)
  await flushAll(t)
  const pg = await pgLedger(t, a.account_id)
  expect(pg.count).toBe(entries.length)
  expect(pg.sum).toBe(500 - sumCharged)
}

test('Σ charged + final remainder = Σ exact costs, to the micro-credit', async () => {
  await fc.assert(
    fc.asyncProperty(price, fc.array(usage, { minLength: 1, maxLength: 8 }), chargesExactly),
    { numRuns: 40 },
  )
})

// Anthropic's shape: a cache write costs more than input (5-minute and 1-hour lifetimes), and the
// reservation weighs each input token at the highest of the three.
const cachingPrice = fc
  .record({ input: fc.integer({ min: 0, max: 10_000 }), writeExtra: fc.integer({ min: 0, max: 10_000 }), hourExtra: fc.integer({ min: 0, max: 10_000 }), output: fc.integer({ min: 0, max: 10_000 }) })
  .map((p) => ({ input: p.input, cachedInput: Math.floor(p.input / 10), output: p.output, cacheWrite: p.input + p.writeExtra, cacheWrite1h: p.input + p.writeExtra + p.hourExtra }))
  .map((p) => ({ ...p, boundInput: p.cacheWrite1h }))
// Within the bound of 2,000 input tokens, however they split among input, reads and both writes;
// a count of 0 is absent, as the usage reader leaves it.
const cachingUsage = fc
  .record({ input: fc.nat(500), cached: fc.nat(500), cache_write: fc.nat(500), cache_write_1h: fc.nat(500), output: fc.nat(1000) })
  .map(({ cache_write, cache_write_1h, ...u }): Usage => ({ ...u, ...(cache_write ? { cache_write } : {}), ...(cache_write_1h ? { cache_write_1h } : {}) }))

test('with cache writes priced apart: Σ charged + final remainder = Σ exact costs, each within its reservation', async () => {
  await fc.assert(
    fc.asyncProperty(cachingPrice, fc.array(cachingUsage, { minLength: 1, maxLength: 6 }), chargesExactly),
    { numRuns: 30 },
  )
})

test('usage past the reservation: the reservation is charged, the excess left uncharged, the remainder kept', async () => {
  const a = await t.signup()
  const principal = (await t.s.guard.tokens.resolve(a.token))!
  const metered = { model: 'm', inputBound: 10, input: 1000, cachedInput: 1000, output: 100_000, ceiling: 10, maxOutput: 10, minOutput: 1 }
  const opened = await openPaidCall(t.s, { principal, target: 'proxy:openai/m', price: 0, unpriced: false, lease: true, metered })
  if (opened.kind !== 'debited') throw new Error('replay')
  const reserved = opened.call.price
  expect(reserved).toBe(Math.ceil((10 * 1000 + 10 * 100_000) / 1e6) + 1)
  const s = await opened.call.settle('ok', { usage: { tokens: { input: 5000, cached: 0, output: 90_000 }, source: 'provider' } })
  expect(s.charged).toBe(reserved)
  expect(await redisBalance(t, a.account_id)).toBe(500 - reserved)
  expect((await readAccount(t.s.ctx, a.account_id, 'mc_rem')).mc_rem ?? 0).toBe(0)
  // A second settle changes nothing.
  expect((await opened.call.settle('ok', { usage: { tokens: { input: 1, cached: 0, output: 1 }, source: 'provider' } })).charged).toBe(reserved)
  expect(await redisBalance(t, a.account_id)).toBe(500 - reserved)
})
