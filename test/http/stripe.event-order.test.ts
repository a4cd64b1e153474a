/**
 * Stripe does not order its events, and retries a delivery we refused for days: a refund or a
 * dispute can reach us before the event that credits its charge (`checkout.session.completed` of a
 * pack, `payment_intent.succeeded` of a top-up whose answer was unknown), and a reversal can reach
 * a charge parked past the balance cap before the founder approves it. Whatever the order, the
 * charge ends credited with what was paid minus what went back (docs/payments.md "Refunds and
 * disputes"), through the webhook with the loopback Stripe fake, the ledger exact in Redis and
 * Postgres and after a `ledger:rebuild`.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { ledgerEntries } from '../../src/db/schema'
import { assertLedger } from '../helpers/invariants'
import { redisBalance } from '../helpers/ledger'
import { get, pathOf } from '../helpers/money'
import { consentStripe, deliver, sessionIdOf, startStripeApp, type StripeTestApp } from '../helpers/stripe-app'
import type { SignedEvent } from '../fakes/stripe'

const ADMIN = 'founder-token-0123456789abcdef'
let a: StripeTestApp
beforeAll(async () => {
  a = await startStripeApp({ ADMIN_TOKEN: ADMIN, DEFAULT_BALANCE_CAP: '30000' })
})
afterAll(async () => {
  await a.close()
})

type Owner = { token: string; account_id: string }
const stores = () => ({ ctx: a.t.s.ctx, db: a.t.s.db, flusher: a.t.s.flusher })

/** The human pays pack `i` at Checkout; the credit event is returned, not delivered. */
async function payPack(owner: Owner, i = 0): Promise<{ credit: SignedEvent; pi: string }> {
  const b = await a.t.req('GET', '/v1/balance', { token: owner.token })
  const r = await get(a.t, pathOf(b.body.links.packs[i].url))
  const sid = sessionIdOf(r.headers.get('location')!)
  const credit = await a.stripe.payCheckout(sid)
  return { credit, pi: a.stripe.sessions.get(sid)!.payment_intent as string }
}

/** An agent's top-up whose answer is unknown (`processing`); its later success is returned, not delivered. */
async function unknownTopup(owner: Owner, credits: number): Promise<{ credit: SignedEvent; pi: string }> {
  a.stripe.chargeProcessing = true
  try {
    const r = await a.t.req('POST', '/v1/topup', { token: owner.token, body: { amount: credits } })
    expect(r.body.credits_added ?? 0).toBe(0)
  } finally {
    a.stripe.chargeProcessing = false
  }
  const pi = [...a.stripe.paymentIntents.values()].filter((p) => p.metadata.acct === owner.account_id).at(-1)!
  pi.status = 'succeeded'
  return { credit: await a.stripe.signedEvent('payment_intent.succeeded', pi), pi: pi.id }
}

const ledgerOf = (acct: string) => a.t.s.db.db.select().from(ledgerEntries).where(and(eq(ledgerEntries.accountId, acct)))

describe('a refund or dispute that arrives before the credit event of its charge', () => {
  test('a pack refunded in full before checkout.session.completed: nothing is credited', async () => {
    const owner = await a.t.signup()
    const { credit, pi } = await payPack(owner) // $5 = 5000 credits
    expect((await deliver(a.t, await a.stripe.dashboardRefund(pi, 500))).status).toBe(200)
    expect((await deliver(a.t, credit)).status).toBe(200)
    expect(await redisBalance(a.t, owner.account_id)).toBe(500)
    await assertLedger(stores(), [{ account: owner.account_id, balance: 500 }])
  })

  test('a pack disputed before its credit, then partially refunded: nothing is credited, nothing taken twice', async () => {
    const owner = await a.t.signup()
    const { credit, pi } = await payPack(owner)
    await deliver(a.t, await a.stripe.dispute(pi))
    await deliver(a.t, credit)
    await deliver(a.t, await a.stripe.dashboardRefund(pi, 200))
    expect(await redisBalance(a.t, owner.account_id)).toBe(500)
    await assertLedger(stores(), [{ account: owner.account_id, balance: 500 }])
  })

  test('a top-up whose answer was unknown, partially refunded before its payment_intent.succeeded: only the rest is credited', async () => {
    const owner = await a.t.signup()
    await consentStripe(a, owner.token, { threshold: 100, refill: 1000, ceiling: 10000 })
    const { credit, pi } = await unknownTopup(owner, 3000) // 300 cents
    expect((await deliver(a.t, await a.stripe.dashboardRefund(pi, 100))).status).toBe(200)
    expect((await deliver(a.t, credit)).body).toMatchObject({ result: 'credited' })
    expect(await redisBalance(a.t, owner.account_id)).toBe(500 + 2000)
    await assertLedger(stores(), [{ account: owner.account_id, balance: 2500 }])
    // The top-up entry says what the charge was worth and what of it was never credited.
    const top = (await ledgerOf(owner.account_id)).find((e) => e.kind === 'topup')!
    expect([top.amount, top.uncredited, top.uncreditedReason]).toEqual([2000, 1000, 'reversed'])
  })

  test('a pack past the balance cap, fully disputed before its credit event: neither credited nor parked', async () => {
    const owner = await a.t.signup()
    const first = await payPack(owner, 1) // 20000
    await deliver(a.t, first.credit)
    const { credit, pi } = await payPack(owner, 1) // 40500 > 30000: would be parked
    await deliver(a.t, await a.stripe.dispute(pi))
    await deliver(a.t, credit)
    const parked = (await a.t.req('GET', '/admin/parked', { token: ADMIN })).body.parked.filter((p: { account_id: string }) => p.account_id === owner.account_id)
    expect(parked).toEqual([])
    expect(await redisBalance(a.t, owner.account_id)).toBe(20500)
    await assertLedger(stores(), [{ account: owner.account_id, balance: 20500 }])
  })
})
