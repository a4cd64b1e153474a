/**
 * Refunds made in Stripe's dashboard and card disputes, mirrored into the ledger (reverse-charge.lua),
 * through the webhook with the loopback Stripe fake: a refunded pack's credits are taken back once
 * however Stripe delivers it; a partial refund then the rest take the difference; a dispute after
 * the credits were spent takes what is left (never below 0), records the rest as unrecovered and
 * turns auto-refill off; the Postgres ledger after the flush matches Redis, the statement lists
 * the entries, and a rebuild after Redis lost the account restores the same balance and the same
 * dedupe. A reversal of a charge never credited (a rejected parked payment), of an account that is
 * gone, or of a charge not ours is acknowledged (200) and nothing is taken; one of a charge parked
 * and not decided yet is recorded, and the approval credits only the rest (the event orders:
 * test/http/stripe.event-order.test.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { events, ledgerEntries, parkedPayments } from '../../src/db/schema'
import { restoreMissing } from '../../src/recovery/rebuild'
import { assertLedger } from '../helpers/invariants'
import { checkRedisInvariant, flushAll, redisBalance } from '../helpers/ledger'
import { get, pathOf } from '../helpers/money'
import { consentStripe, deliver, sessionIdOf, startStripeApp, type StripeTestApp } from '../helpers/stripe-app'

const ADMIN = 'founder-token-0123456789abcdef'
let a: StripeTestApp
beforeAll(async () => {
  a = await startStripeApp({ ADMIN_TOKEN: ADMIN, DEFAULT_BALANCE_CAP: '30000' })
})
afterAll(async () => {
  await a.close()
})

type Owner = { token: string; account_id: string }

/** Buys the account's `i`th pack through Checkout; returns its PaymentIntent id. */
async function buyPack(owner: Owner, i = 0): Promise<string> {
  const { t, stripe } = a
  const b = await t.req('GET', '/v1/balance', { token: owner.token })
  const r = await get(t, pathOf(b.body.links.packs[i].url))
  const sid = sessionIdOf(r.headers.get('location')!)
  const w = await deliver(t, await stripe.payCheckout(sid))
  expect(w.body).toMatchObject({ result: 'credited' })
  return stripe.sessions.get(sid)!.payment_intent as string
}

/** Buys the account's second pack (20000 credits) past the balance cap: parked; returns it as /admin/parked lists it. */
async function parkSecondPack(owner: Owner): Promise<{ id: string; charge_id: string }> {
  const { t, stripe } = a
  const b = await t.req('GET', '/v1/balance', { token: owner.token })
  const r = await get(t, pathOf(b.body.links.packs[1].url))
  const sid = sessionIdOf(r.headers.get('location')!)
  expect((await deliver(t, await stripe.payCheckout(sid))).body.result).toBe('parked') // 40500 > 30000
  return (await t.req('GET', '/admin/parked', { token: ADMIN })).body.parked.find((p: { account_id: string }) => p.account_id === owner.account_id)
}

const reversals = (acct: string) =>
  a.t.s.db.db
    .select()
    .from(ledgerEntries)
    .where(and(eq(ledgerEntries.accountId, acct), eq(ledgerEntries.kind, 'reversal')))
    .orderBy(ledgerEntries.streamId)

const stores = () => ({ ctx: a.t.s.ctx, db: a.t.s.db, flusher: a.t.s.flusher })

describe('a refund made in the dashboard', () => {
  test('takes the credits of a refunded pack back once, however often Stripe delivers it', async () => {
    const { t, stripe } = a
    const owner = await t.signup()
    const pi = await buyPack(owner) // $5 = 5000 credits
    expect(await redisBalance(t, owner.account_id)).toBe(5500)

    const ev = await stripe.dashboardRefund(pi, 500)
    const w = await deliver(t, ev)
    expect(w.status).toBe(200)
    expect(w.body).toMatchObject({ received: true, duplicate: false, result: 'reversed' })
    expect(await redisBalance(t, owner.account_id)).toBe(500)
    // The same delivery again, and the same cumulative refund under another event id: nothing more.
    expect((await deliver(t, ev)).body).toMatchObject({ duplicate: true })
    expect((await deliver(t, await stripe.signedEvent('charge.refunded', stripe.chargeOf(pi)))).body).toMatchObject({ duplicate: false, result: 'duplicate' })
    const burst = await stripe.signedEvent('charge.refunded', stripe.chargeOf(pi))
    await Promise.all(Array.from({ length: 8 }, () => deliver(t, burst)))
    expect(await redisBalance(t, owner.account_id)).toBe(500)
    await checkRedisInvariant(t, owner.account_id)

    await assertLedger(stores(), [{ account: owner.account_id, balance: 500 }])
    const rows = await reversals(owner.account_id)
    expect(rows.map((r) => [r.amount, r.refId, r.target, r.uncredited, r.balanceAfter])).toEqual([[-5000, pi, 'refund', null, 500]])

    // The statement lists it, and still adds up.
    const st = await t.req('GET', '/v1/ledger', { token: owner.token })
    const lines = st.text.trim().split('\n').map((l) => JSON.parse(l))
    expect(lines.find((l) => l.kind === 'reversal')).toMatchObject({ type: 'entry', amount: -5000, balance_after: 500, route_or_slug: 'refund' })
    expect(lines.at(-1)).toMatchObject({ type: 'closing', balance: 500 })

    // The owner hears of it.
    const evs = await t.s.db.db.select().from(events).where(and(eq(events.accountId, owner.account_id), eq(events.type, 'payment.reversed')))
    expect(evs.map((e) => e.data)).toEqual([
      { charge_id: pi, cause: 'refund', credits: 5000, taken: 5000, unrecovered: 0, balance: 500, reversed_cents: 500, mandate_disabled: false },
    ])
  })

  test('a partial refund, then the rest: each takes the difference; a late older delivery takes nothing', async () => {
    const { t, stripe } = a
    const owner = await t.signup()
    await consentStripe(a, owner.token, { threshold: 100, refill: 1000, ceiling: 10000 })
    const top = await t.req('POST', '/v1/topup', { token: owner.token, body: { amount: 3000 } }) // 300 cents
    expect(top.body).toMatchObject({ credits_added: 3000, balance: 3500 })
    const pi = top.body.charge_id as string

    const first = await stripe.dashboardRefund(pi, 100) // cumulative 100 of 300 cents
    expect((await deliver(t, first)).body).toMatchObject({ result: 'reversed' })
    expect(await redisBalance(t, owner.account_id)).toBe(2500)
    const rest = await stripe.dashboardRefund(pi, 200) // cumulative 300
    expect((await deliver(t, rest)).body).toMatchObject({ result: 'reversed' })
    expect(await redisBalance(t, owner.account_id)).toBe(500)
    // Stripe retries the first event after the second (out of order): its 100 cents were taken already.
    const late = await stripe.signedEvent('charge.refunded', { ...stripe.chargeOf(pi), amount_refunded: 100 })
    expect((await deliver(t, late)).body).toMatchObject({ result: 'duplicate' })
    expect(await redisBalance(t, owner.account_id)).toBe(500)
    // A refund leaves auto-refill on.
    expect((await t.req('GET', '/v1/mandate', { token: owner.token })).body.enabled).toBe(true)

    await assertLedger(stores(), [{ account: owner.account_id, balance: 500 }])
    expect((await reversals(owner.account_id)).map((r) => [r.amount, r.target])).toEqual([
      [-1000, 'refund'],
      [-2000, 'refund'],
    ])
  })
})

describe('a dispute', () => {
  test('after the credits were spent: takes what is left (balance 0, never below), records the rest as unrecovered, turns auto-refill off', async () => {
    const { t, stripe } = a
    const owner = await t.signup()
    await consentStripe(a, owner.token, { threshold: 100, refill: 1000, ceiling: 10000 })
    const top = await t.req('POST', '/v1/topup', { token: owner.token, body: { amount: 1000 } }) // 100 cents
    expect(top.body.balance).toBe(1500)
    const pi = top.body.charge_id as string
    for (let i = 0; i < 2; i++) expect((await t.req('POST', '/v1/call/test.pricey', { token: owner.token, body: { i } })).status).toBe(200)
    expect(await redisBalance(t, owner.account_id)).toBe(900)

    const ev = await stripe.dispute(pi)
    const w = await deliver(t, ev)
    expect(w.status).toBe(200)
    expect(w.body).toMatchObject({ result: 'reversed' })
    expect(await redisBalance(t, owner.account_id)).toBe(0)
    const m = (await t.req('GET', '/v1/mandate', { token: owner.token })).body
    expect(m).toMatchObject({ enabled: false, card: null, disabled_reason: 'card_disputed' })
    // The disputed card is not charged again: no top-up, no auto-refill.
    expect((await t.req('POST', '/v1/topup', { token: owner.token, body: { amount: 1000 } })).body).toMatchObject({ error: 'PAYMENT_REQUIRED', reason: 'no_mandate' })
    expect((await t.req('POST', '/v1/call/test.echo', { token: owner.token, body: { q: 'x' } })).status).toBe(402)
    await t.s.refiller.idle()
    expect([...stripe.paymentIntents.values()].filter((p) => p.metadata.acct === owner.account_id)).toHaveLength(1)

    // Replayed, redelivered under a new id, and a refund of the disputed charge on top: nothing more.
    expect((await deliver(t, ev)).body).toMatchObject({ duplicate: true })
    expect((await deliver(t, await stripe.signedEvent('charge.dispute.created', JSON.parse(ev.payload).data.object))).body).toMatchObject({ result: 'duplicate' })
    expect((await deliver(t, await stripe.dashboardRefund(pi, 100))).body).toMatchObject({ result: 'duplicate' })
    expect(await redisBalance(t, owner.account_id)).toBe(0)

    await assertLedger(stores(), [{ account: owner.account_id, balance: 0 }])
    const rows = await reversals(owner.account_id)
    expect(rows.map((r) => [r.amount, r.refId, r.target, r.uncredited, r.uncreditedReason, r.balanceAfter])).toEqual([[-900, pi, 'dispute', 100, 'unrecovered', 0]])
    const evs = await t.s.db.db.select().from(events).where(and(eq(events.accountId, owner.account_id), eq(events.type, 'payment.reversed')))
    expect(evs.map((e) => e.data)).toEqual([
      { charge_id: pi, cause: 'dispute', credits: 1000, taken: 900, unrecovered: 100, balance: 0, reversed_cents: 100, mandate_disabled: true },
    ])

    // Redis loses the account (and the webhook dedupe): the rebuild restores the same balance, and
    // the restored reversal record still takes nothing twice.
    const { keys } = t.s.ctx
    await t.redis.del(keys.account(owner.account_id), keys.charge(owner.account_id, pi), keys.reversal(owner.account_id, pi), keys.webhookEvent(ev.id))
    const summary = await restoreMissing(t.s.ctx, t.s.db.db)
    expect(summary.failed).toEqual([])
    expect(await redisBalance(t, owner.account_id)).toBe(0)
    expect(await t.redis.hgetall(keys.reversal(owner.account_id, pi))).toEqual({ refund: '0', dispute: '1000' })
    expect(await t.redis.hget(keys.charge(owner.account_id, pi), 'credits')).toBe('1000')
    expect((await deliver(t, ev)).body).toMatchObject({ duplicate: false, result: 'duplicate' })
    await assertLedger(stores(), [{ account: owner.account_id, balance: 0 }])
  })
})

describe('credits held by metered calls in flight', () => {
  test('are never taken: only the spendable balance is, the rest is unrecovered', async () => {
    const { t, stripe } = a
    const owner = await t.signup()
    const pi = await buyPack(owner)
    // A metered call in flight reserves 5200 of the 5500 (debit.lua moves them to `held`, no entry).
    const acctKey = t.s.ctx.keys.account(owner.account_id)
    await t.redis.multi().hincrby(acctKey, 'balance', -5200).hincrby(acctKey, 'held', 5200).exec()
    expect((await deliver(t, await stripe.dashboardRefund(pi, 500))).body).toMatchObject({ result: 'reversed' })
    expect(await t.redis.hmget(acctKey, 'balance', 'held')).toEqual(['0', '5200'])
    const entries = await checkRedisInvariant(t, owner.account_id)
    expect(entries.find((e) => e.kind === 'reversal')).toMatchObject({ amount: -300, bal: 5200 })
    await flushAll(t)
    expect((await reversals(owner.account_id)).map((r) => [r.amount, r.uncredited])).toEqual([[-300, 4700]])
  })
})

describe('the source of a charge’s credits', () => {
  test('past the charge record’s 90 days, the top-up entry in Postgres says what was credited', async () => {
    const { t, stripe } = a
    const owner = await t.signup()
    const pi = await buyPack(owner)
    await flushAll(t)
    await t.redis.del(t.s.ctx.keys.charge(owner.account_id, pi)) // the record expired
    expect((await deliver(t, await stripe.dashboardRefund(pi, 250))).body).toMatchObject({ result: 'reversed' })
    expect(await redisBalance(t, owner.account_id)).toBe(3000)
    await assertLedger(stores(), [{ account: owner.account_id, balance: 3000 }])
  })

  test('a record without its credits and no entry in Postgres yet: 500, Stripe retries, and the retry after the flush takes them', async () => {
    const { t, stripe } = a
    const owner = await t.signup()
    const pi = await buyPack(owner)
    // A record written before it kept its credits, whose top-up entry has not reached Postgres.
    await t.redis.hdel(t.s.ctx.keys.charge(owner.account_id, pi), 'credits')
    const ev = await stripe.dashboardRefund(pi, 500)
    expect((await deliver(t, ev)).status).toBe(500)
    expect(await redisBalance(t, owner.account_id)).toBe(5500)
    await flushAll(t)
    expect((await deliver(t, ev)).body).toMatchObject({ duplicate: false, result: 'reversed' })
    expect(await redisBalance(t, owner.account_id)).toBe(500)
  })
})

describe('reversals with nothing to take back are acknowledged', () => {
  test('our own refund of a rejected parked payment: not credited, nothing taken', async () => {
    const { t, stripe } = a
    const owner = await t.signup()
    await buyPack(owner, 1) // 20000
    const parked = await parkSecondPack(owner)
    expect((await t.req('POST', `/admin/parked/${parked.id}/reject`, { token: ADMIN })).body.state).toBe('rejected')
    const w = await deliver(t, await stripe.signedEvent('charge.refunded', stripe.chargeOf(parked.charge_id)))
    expect(w.status).toBe(200)
    expect(w.body).toMatchObject({ result: 'not_credited' })
    expect(await redisBalance(t, owner.account_id)).toBe(20500)
    await assertLedger(stores(), [{ account: owner.account_id, balance: 20500 }])
    expect(await reversals(owner.account_id)).toEqual([])
  })

  test('a parked payment refunded or disputed in full before the founder decided: `reversed`, never approvable, written through', async () => {
    const { t, stripe } = a
    for (const cause of ['refund', 'dispute'] as const) {
      const owner = await t.signup()
      await buyPack(owner, 1) // 20000
      const parked = await parkSecondPack(owner)
      const ev = cause === 'refund' ? await stripe.dashboardRefund(parked.charge_id, 2000) : await stripe.dispute(parked.charge_id)
      const w = await deliver(t, ev)
      expect(w.status).toBe(200)
      // Recorded before any credit (an amount-0 entry carries it to Postgres), and nothing is left to approve.
      expect(w.body).toMatchObject({ result: 'recorded' })
      // The founder can no longer credit money the processor gave back, nor refund it a second time.
      const listed = (await t.req('GET', '/admin/parked', { token: ADMIN })).body.parked.map((p: { id: string }) => p.id)
      expect(listed).not.toContain(parked.id)
      for (const action of ['approve', 'reject']) {
        const r = await t.req('POST', `/admin/parked/${parked.id}/${action}`, { token: ADMIN })
        expect([action, r.status, r.body.error]).toEqual([action, 409, 'CONFLICT'])
      }
      expect(await redisBalance(t, owner.account_id)).toBe(20500)
      await flushAll(t)
      const [row] = await t.s.db.db.select().from(parkedPayments).where(eq(parkedPayments.id, parked.id))
      expect(row?.state).toBe('reversed')
      await assertLedger(stores(), [{ account: owner.account_id, balance: 20500 }])
      expect((await reversals(owner.account_id)).map((r) => [r.amount, r.target, r.uncredited, r.uncreditedReason])).toEqual([[0, cause, 20000, 'before_credit']])
    }
  })

  test('a parked payment partly refunded before the founder decided: still parked, and its approval credits only the rest', async () => {
    const { t, stripe } = a
    const owner = await t.signup()
    await buyPack(owner, 1) // 20000
    const parked = await parkSecondPack(owner)
    expect((await deliver(t, await stripe.dashboardRefund(parked.charge_id, 500))).body).toMatchObject({ result: 'recorded' }) // 500 of 2000 cents
    const listed = (await t.req('GET', '/admin/parked', { token: ADMIN })).body.parked.map((p: { id: string }) => p.id)
    expect(listed).toContain(parked.id)
    expect((await t.req('POST', `/admin/parked/${parked.id}/approve`, { token: ADMIN })).body.state).toBe('approved')
    expect(await redisBalance(t, owner.account_id)).toBe(20500 + 15000)
    // The rest refunded later: the difference is taken back from the balance.
    expect((await deliver(t, await stripe.dashboardRefund(parked.charge_id, 1500))).body).toMatchObject({ result: 'reversed' })
    expect(await redisBalance(t, owner.account_id)).toBe(20500)
    await assertLedger(stores(), [{ account: owner.account_id, balance: 20500 }])
  })

  test('a parked payment the founder approved, then refunded in the dashboard: its credits are taken back', async () => {
    const { t, stripe } = a
    const owner = await t.signup()
    await buyPack(owner, 1) // 20000
    const parked = await parkSecondPack(owner)
    expect((await t.req('POST', `/admin/parked/${parked.id}/approve`, { token: ADMIN })).body.state).toBe('approved')
    expect(await redisBalance(t, owner.account_id)).toBe(40500)
    // Before the approval's entry reached Postgres: the parked payment says what was credited.
    expect((await deliver(t, await stripe.dashboardRefund(parked.charge_id, 2000))).body).toMatchObject({ result: 'reversed' })
    expect(await redisBalance(t, owner.account_id)).toBe(20500)
    await assertLedger(stores(), [{ account: owner.account_id, balance: 20500 }])
  })

  test('an account that is gone, and a charge that is not ours: 200, nothing applied', async () => {
    const { t, stripe } = a
    const ghost = 'acc_03_ghostaccount0000000'
    stripe.paymentIntents.set('pi_test_ghost', { id: 'pi_test_ghost', object: 'payment_intent', amount: 500, currency: 'usd', status: 'succeeded', created: 1, metadata: { purpose: 'pack', acct: ghost, credits: '5000' } })
    const gone = await deliver(t, await stripe.dashboardRefund('pi_test_ghost', 500))
    expect(gone.status).toBe(200)
    expect(gone.body).toMatchObject({ result: 'no_account' })
    stripe.paymentIntents.set('pi_test_other', { id: 'pi_test_other', object: 'payment_intent', amount: 900, currency: 'usd', status: 'succeeded', created: 1, metadata: {} })
    expect((await deliver(t, await stripe.dispute('pi_test_other'))).body).toMatchObject({ result: 'ignored' })
    // A PaymentIntent Stripe does not know (another Stripe account's charge id): ignored too.
    const unknown = await stripe.signedEvent('charge.refunded', { id: 'ch_x', object: 'charge', amount: 100, amount_refunded: 100, payment_intent: 'pi_test_nope', metadata: {} })
    expect((await deliver(t, unknown)).body).toMatchObject({ result: 'ignored' })
  })
})
