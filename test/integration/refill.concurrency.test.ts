/**
 * Auto-refill under load, across two server instances sharing Redis, in Stripe mode (the fake
 * charges slowly, so overlapping charges would show): 200 concurrent paid calls drain an account
 * with auto-refill on. Exactly the refills the rules allow happen, never two at once, never past
 * the monthly ceiling or the balance cap, and the ledger sums exactly (Redis = outbox ∪ Postgres).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp, type TestResponse } from '../helpers/harness'
import { assertLedger } from '../helpers/invariants'
import { redisBalance } from '../helpers/ledger'
import { topupRows } from '../helpers/money'
import { consentStripe, startStripeApp, type StripeTestApp } from '../helpers/stripe-app'

const PRICE = 5 // test.echo
let a: StripeTestApp
let b: TestApp // a second instance of the same deployment
beforeAll(async () => {
  a = await startStripeApp({ DEFAULT_BALANCE_CAP: '1200' })
  b = await startTestApp({
    database: a.t.db,
    prefix: a.t.prefix,
    clock: a.t.clock,
    env: {
      PAYMENTS: 'stripe',
      STRIPE_SECRET_KEY: a.stripe.secretKey,
      STRIPE_WEBHOOK_SECRET: a.stripe.webhookSecret,
      STRIPE_API_BASE: a.stripe.url,
      DEFAULT_BALANCE_CAP: '1200',
    },
  })
  a.stripe.chargeLatencyMs = 30
})
afterAll(async () => {
  await b.s.close() // b shares a's keys and database: a's close cleans up both
  b.fake.stop()
  await a.close()
})

async function drain(token: string, n: number): Promise<TestResponse[]> {
  const answers = await Promise.all(
    Array.from({ length: n }, (_, i) => (i % 2 === 0 ? a.t : b).req('POST', '/v1/call/test.echo', { token, body: { q: `c${i}` } })),
  )
  // Both instances' background loops, including one waiting for the other's lock.
  for (let i = 0; i < 3; i++) await Promise.all([a.t.s.refiller.idle(), b.s.refiller.idle()])
  return answers
}

function tally(answers: TestResponse[]) {
  const ok = answers.filter((r) => r.status === 200)
  const refused = answers.filter((r) => r.status === 402)
  expect(ok.length + refused.length, JSON.stringify(answers.find((r) => r.status !== 200 && r.status !== 402)?.body)).toBe(answers.length)
  for (const r of refused) expect(r.body).toMatchObject({ error: 'PAYMENT_REQUIRED', reason: 'insufficient_balance' })
  return { ok, refused }
}

describe('auto-refill under 200 concurrent calls on two instances', () => {
  test('the ceiling binds: exactly ceiling/refill refills, one at a time, ledger exact', async () => {
    const acct = await a.t.signup()
    // Every debit leaves the balance under the threshold, so every call asks for a refill:
    // only the lock and the ceiling (2 × 500) decide how many happen.
    await consentStripe(a, acct.token, { threshold: 5000, refill: 500, ceiling: 1000 })
    const chargesBefore = a.stripe.maxConcurrentCharges
    const { ok } = tally(await drain(acct.token, 200))

    const charges = [...a.stripe.paymentIntents.values()].filter((p) => p.metadata.acct === acct.account_id)
    expect(charges).toHaveLength(2)
    expect(charges.every((c) => c.status === 'succeeded' && c.amount === 50)).toBe(true)
    expect(Math.max(chargesBefore, a.stripe.maxConcurrentCharges)).toBe(1)
    const m = await a.t.req('GET', '/v1/mandate', { token: acct.token })
    expect(m.body).toMatchObject({ enabled: true, refilled_this_period: 1000 })
    expect(await a.t.s.ctx.redis.hget(a.t.s.ctx.keys.mandate(acct.account_id), 'pending')).toBeNull()

    const balance = 500 + 1000 - PRICE * ok.length
    expect(await redisBalance(a.t, acct.account_id)).toBe(balance)
    await assertLedger(a.t.s, [{ account: acct.account_id, balance, debits: ok.map((r) => r.body.call_id) }])
    const rows = await topupRows(a.t, acct.account_id)
    expect(rows.map((r) => r.refId).sort()).toEqual(charges.map((c) => c.id).sort())
  })

  test('the balance cap binds: no balance ever above it, every charge credited, never two at once', async () => {
    const acct = await a.t.signup()
    // 500 + refills of 500 under a cap of 1200: a refill may only start at a balance ≤ 700.
    await consentStripe(a, acct.token, { threshold: 5000, refill: 500, ceiling: 100000 })
    a.stripe.maxConcurrentCharges = 0
    const answers = await drain(acct.token, 200)
    const { ok } = tally(answers)

    const charges = [...a.stripe.paymentIntents.values()].filter((p) => p.metadata.acct === acct.account_id)
    expect(charges.length).toBeGreaterThanOrEqual(1)
    expect(a.stripe.maxConcurrentCharges).toBe(1)
    for (const r of ok) expect(r.body.balance).toBeLessThanOrEqual(1200)
    const balance = 500 + 500 * charges.length - PRICE * ok.length
    const final = await redisBalance(a.t, acct.account_id)
    expect(final).toBe(balance)
    expect(final).toBeLessThanOrEqual(1200)
    // The cap is checked before charging, so no paid refill ever had to be parked.
    const { redis, keys } = a.t.s.ctx
    for (const c of charges) expect(await redis.hget(keys.charge(acct.account_id, c.id), 'state')).toBe('credited')
    const m = await a.t.req('GET', '/v1/mandate', { token: acct.token })
    expect(m.body.refilled_this_period).toBe(500 * charges.length)
    await assertLedger(a.t.s, [{ account: acct.account_id, balance, debits: ok.map((r) => r.body.call_id) }])
    expect((await topupRows(a.t, acct.account_id)).length).toBe(charges.length)
  })
})
