/**
 * Property (docs/api.md §12, docs/metering.md): over random prices, token counts and fee percents,
 * an account's metered calls on both lanes, interleaved (debit.lua reserves, settle.lua charges),
 * are charged exactly what BigInt arithmetic says: the house lane floor((r + cost) / 1e6), the
 * owner's lane floor((r + cost × pct / 100) / 1e6), one remainder carried across both in
 * micro-credits (`mc_rem`) and hundredths of one (`mc_rem_c`); the owner's reservation is
 * ceil(R × pct / 100) of the house lane's R; the balance is 500 − Σ charged = Σ of the account's
 * ledger entries, in Redis and after the flush in Postgres.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import { openPaidCall } from '../../src/paid-request'
import { readAccount } from '../../src/redis/account-hash'
import { tokenPrices } from '../helpers/metering'
import { startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, flushAll, pgLedger, redisBalance } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

const price = tokenPrices()
const call = fc.record({ owner: fc.boolean(), input: fc.nat(1000), cached: fc.nat(1000), output: fc.nat(1000) })
const INPUT_BOUND = 2000
const CEILING = 1000
const CENTI = 100_000_000n

type Prices = { input: number; cachedInput: number; output: number }

async function chargedExactly(p: Prices, pct: number, calls: { owner: boolean; input: number; cached: number; output: number }[]) {
  const a = await t.signup()
  const principal = (await t.s.guard.tokens.resolve(a.token))!
  const house = Math.ceil((INPUT_BOUND * p.input + CEILING * p.output) / 1e6) + 1
  // The remainder in hundredths of a micro-credit, as BigInt.
  let rest = 0n
  let spent = 0
  for (const c of calls) {
    const feePct = c.owner ? pct : undefined
    const opened = await openPaidCall(t.s, {
      principal,
      target: 'proxy:openai/m',
      price: 0,
      unpriced: feePct === 0,
      lease: true,
      metered: { model: 'm', inputBound: INPUT_BOUND, ...p, ceiling: CEILING, maxOutput: CEILING, minOutput: 1, ...(feePct === undefined ? {} : { feePct }) },
    })
    if (opened.kind !== 'debited') throw new Error('replay')
    expect(opened.call.price).toBe(c.owner ? Math.ceil((house * pct) / 100) : house)
    const s = await opened.call.settle('ok', { usage: { tokens: { input: c.input, cached: c.cached, output: c.output }, source: 'provider' } })
    const cost = BigInt(c.input) * BigInt(p.input) + BigInt(c.cached) * BigInt(p.cachedInput) + BigInt(c.output) * BigInt(p.output)
    const total = rest + cost * BigInt(c.owner ? pct : 100)
    const charged = total / CENTI
    rest = total - charged * CENTI
    expect(s.charged).toBe(Number(charged))
    expect(s.charged).toBeLessThanOrEqual(opened.call.price)
    spent += s.charged
    const acct = await readAccount(t.s.ctx, a.account_id, 'mc_rem', 'mc_rem_c')
    const r = acct.mc_rem ?? 0
    const q = acct.mc_rem_c ?? 0
    expect(r).toBeGreaterThanOrEqual(0)
    expect(r).toBeLessThan(1e6)
    expect(q).toBeGreaterThanOrEqual(0)
    expect(q).toBeLessThan(100)
    expect(BigInt(r) * 100n + BigInt(q)).toBe(rest)
  }
  expect(await redisBalance(t, a.account_id)).toBe(500 - spent)
  const entries = await checkRedisInvariant(t, a.account_id)
  await flushAll(t)
  const pg = await pgLedger(t, a.account_id)
  expect(pg.count).toBe(entries.length)
  expect(pg.sum).toBe(500 - spent)
}

test('both lanes, interleaved: every charge and the remainder as BigInt arithmetic has them', async () => {
  await fc.assert(fc.asyncProperty(price, fc.integer({ min: 0, max: 100 }), fc.array(call, { minLength: 1, maxLength: 8 }), chargedExactly), { numRuns: 40 })
})

test('hundredths of a micro-credit are kept, and become a micro-credit when 100 of them add up', async () => {
  // 1 % of a 1-micro-credit cost, three times (3 hundredths), then 97 % of it: exactly 1 micro-credit left.
  await chargedExactly({ input: 1, cachedInput: 0, output: 0 }, 1, [
    { owner: true, input: 1, cached: 0, output: 0 },
    { owner: true, input: 1, cached: 0, output: 0 },
    { owner: true, input: 1, cached: 0, output: 0 },
  ])
  await chargedExactly({ input: 1, cachedInput: 0, output: 0 }, 97, [
    { owner: true, input: 3, cached: 0, output: 0 },
    { owner: true, input: 1, cached: 0, output: 0 },
  ])
})
