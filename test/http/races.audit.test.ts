/**
 * Duplicates and races across the service, at the HTTP edge: every operation that must take effect
 * once is sent several times at once (and again later), and must take effect exactly once, with a
 * consistent answer and the money exact (Redis = Postgres after a flush).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { flushAll, pgLedger, redisBalance } from '../helpers/ledger'
import { pathOf, get } from '../helpers/money'
import { consentStripe, deliver, sessionIdOf, startStripeApp, type StripeTestApp } from '../helpers/stripe-app'
import { startStripeInterpose, type StripeInterpose } from '../helpers/stripe-interpose'

const ADMIN = 'founder-token-0123456789abcdef'
let a: StripeTestApp
let relay: StripeInterpose

beforeAll(async () => {
  relay = startStripeInterpose()
  a = await startStripeApp({ ADMIN_TOKEN: ADMIN, DEFAULT_BALANCE_CAP: '21000', STRIPE_API_BASE: relay.url })
  relay.target = a.stripe.url
})
afterAll(async () => {
  await a.close()
  relay.stop()
})

/** A paid credit pack's checkout.session.completed delivery (pack 1: 20000 credits), not yet delivered. */
async function paidPack(token: string, pack = 1) {
  const { t, stripe } = a
  const b = await t.req('GET', '/v1/balance', { token })
  const r = await get(t, pathOf(b.body.links.packs[pack].url))
  const sid = sessionIdOf(r.headers.get('location')!)
  return stripe.payCheckout(sid)
}

async function exact(acct: string, balance: number) {
  const { t } = a
  expect(await redisBalance(t, acct)).toBe(balance)
  await flushAll(t)
  const pg = await pgLedger(t, acct)
  expect(pg.sum).toBe(balance)
  expect(pg.distinct).toBe(pg.count)
}

describe("a top-up's synchronous answer racing its own webhook", () => {
  test('the webhook credits first: the answer is the credit, money moved once', async () => {
    const { t, stripe } = a
    const acct = await t.signup()
    await consentStripe(a, acct.token, { threshold: 100, refill: 1000, ceiling: 100000 })
    relay.afterCharge = async (pi) => {
      relay.afterCharge = null
      const ev = await stripe.signedEvent('payment_intent.succeeded', pi)
      const ws = await Promise.all([deliver(t, ev), deliver(t, ev)])
      expect(ws.map((w) => w.status)).toEqual([200, 200])
    }
    const r = await t.req('POST', '/v1/topup', { token: acct.token, body: { amount: 1000 } })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ credits_added: 1000, balance: 1500 })
    expect((await t.req('GET', '/v1/mandate', { token: acct.token })).body).toMatchObject({ refilled_this_period: 1000, pending_this_period: 0 })
    await exact(acct.account_id, 1500)
  })

  test('the webhook parks it first (the account crossed the cap meanwhile): the answer is the BALANCE_CAP the parking itself answers', async () => {
    const { t, stripe } = a
    const acct = await t.signup()
    await consentStripe(a, acct.token, { threshold: 100, refill: 1000, ceiling: 100000 })
    const pack = await paidPack(acct.token)
    let parkedByWebhook = ''
    relay.afterCharge = async (pi) => {
      relay.afterCharge = null
      // A pack paid meanwhile fills the balance to 20500 of 21000: the top-up's 1000 no longer fits.
      expect((await deliver(t, pack)).body.result).toBe('credited')
      const w = await deliver(t, await stripe.signedEvent('payment_intent.succeeded', pi))
      expect(w.body.result).toBe('parked')
      parkedByWebhook = (await t.req('GET', '/admin/parked', { token: ADMIN })).body.parked.find((p: { account_id: string }) => p.account_id === acct.account_id).id
    }
    const r = await t.req('POST', '/v1/topup', { token: acct.token, body: { amount: 1000 } })
    // What the same top-up answers when its own credit parks it (no webhook first).
    expect(r.status).toBe(409)
    expect(r.body).toMatchObject({ error: 'BALANCE_CAP', balance_cap: 21000, balance: 20500, parked: true, parked_id: parkedByWebhook })
    await exact(acct.account_id, 20500)
  })
})

describe('the same operation sent at once', () => {
  test('10 POST /v1/topup at once: one charge, one credit, the rest CONFLICT', async () => {
    const { t, stripe } = a
    const acct = await t.signup()
    await consentStripe(a, acct.token, { threshold: 100, refill: 1000, ceiling: 100000 })
    stripe.chargeLatencyMs = 30
    try {
      const rs = await Promise.all(Array.from({ length: 10 }, () => t.req('POST', '/v1/topup', { token: acct.token, body: { amount: 1000 } })))
      expect(rs.filter((r) => r.status === 200)).toHaveLength(1)
      expect(rs.filter((r) => r.status === 409).every((r) => r.body.error === 'CONFLICT')).toBe(true)
      expect(rs.filter((r) => r.status === 409)).toHaveLength(9)
    } finally {
      stripe.chargeLatencyMs = 0
    }
    expect([...stripe.paymentIntents.values()].filter((p) => p.metadata.acct === acct.account_id)).toHaveLength(1)
    // And later: the day's top-up is used.
    expect((await t.req('POST', '/v1/topup', { token: acct.token, body: { amount: 1000 } })).status).toBe(409)
    await exact(acct.account_id, 1500)
  })

  test('the same consent event 10 times at once with the return page: applied once, no card detached', async () => {
    const { t, stripe } = a
    const acct = await t.signup()
    await t.req('PUT', '/v1/mandate', { token: acct.token, body: { threshold: 100, refill: 1000, ceiling: 10000 } })
    const m = await t.req('GET', '/v1/mandate', { token: acct.token })
    const page = await (await import('../helpers/money')).postForm(t, pathOf(m.body.enable_url), {})
    const sid = sessionIdOf(page.headers.get('location')!)
    const ev = await stripe.completeSetup(sid, '4242424242424242')
    const ref = new URL(m.body.enable_url).searchParams.get('ref')
    const detachesBefore = stripe.requests.filter((r) => r.path.endsWith('/detach')).length
    const [ws, pages] = await Promise.all([
      Promise.all(Array.from({ length: 10 }, () => deliver(t, ev))),
      Promise.all(Array.from({ length: 5 }, () => get(t, `/mandate/done?ref=${ref}&session_id=${sid}`))),
    ])
    expect(ws.every((w) => w.status === 200)).toBe(true)
    expect(pages.every((p) => p.status === 200)).toBe(true)
    expect(ws.filter((w) => w.body.result === 'consent_applied').length).toBeLessThanOrEqual(1)
    expect(stripe.requests.filter((r) => r.path.endsWith('/detach')).length).toBe(detachesBefore)
    expect((await t.req('GET', '/v1/mandate', { token: acct.token })).body).toMatchObject({ enabled: true, card: { last4: '4242' } })
  })

  test('a parked payment approved and rejected 10 times at once: one decision, money and refund agree', async () => {
    const { t, stripe } = a
    const acct = await t.signup()
    expect((await deliver(t, await paidPack(acct.token))).body.result).toBe('credited') // 20500
    expect((await deliver(t, await paidPack(acct.token))).body.result).toBe('parked')
    const p = (await t.req('GET', '/admin/parked', { token: ADMIN })).body.parked.find((x: { account_id: string }) => x.account_id === acct.account_id)
    const rs = await Promise.all(
      Array.from({ length: 10 }, (_, i) => t.req('POST', `/admin/parked/${p.id}/${i % 2 ? 'reject' : 'approve'}`, { token: ADMIN })),
    )
    const won = rs.filter((r) => r.status === 200)
    expect(won).toHaveLength(1)
    expect(rs.filter((r) => r.status === 409)).toHaveLength(9)
    const refunds = stripe.refunds.filter((r) => r.payment_intent === p.charge_id)
    const approved = won[0]!.body.state === 'approved'
    expect(refunds).toHaveLength(approved ? 0 : 1)
    // Later: decided for good.
    expect((await t.req('POST', `/admin/parked/${p.id}/approve`, { token: ADMIN })).status).toBe(409)
    expect((await t.req('POST', `/admin/parked/${p.id}/reject`, { token: ADMIN })).status).toBe(409)
    await exact(acct.account_id, approved ? 40500 : 20500)
  })

  test('a dead letter replayed 10 times at once: queued once', async () => {
    const { t } = a
    const victim = await t.signup()
    const shard = t.s.ctx.keys.shardOf(victim.account_id)
    await t.redis.xadd(t.s.ctx.keys.outbox(shard), '*', 'kind', 'account', 'id', 'acc_poison2:account', 'acct', victim.account_id, 'email', 'x\u0000@example.com', 'public_ref', 'ref_poison2', 'origin', '', 'referrer', '', 'owner', 'x', 'at', String(Date.now()))
    await flushAll(t)
    const list = await t.req('GET', '/admin/dead-letters', { token: ADMIN })
    const id = list.body.dead_letters[0].id as string
    const before = await t.redis.xlen(t.s.ctx.keys.outbox(shard))
    const rs = await Promise.all(Array.from({ length: 10 }, () => t.req('POST', `/admin/dead-letters/${id}/replay`, { token: ADMIN })))
    expect(rs.filter((r) => r.status === 200)).toHaveLength(1)
    expect(rs.filter((r) => r.status === 404)).toHaveLength(9)
    expect(await t.redis.xlen(t.s.ctx.keys.outbox(shard))).toBe(before + 1)
    expect((await t.req('POST', `/admin/dead-letters/${id}/replay`, { token: ADMIN })).status).toBe(404)
  })

  test('the owner token rotated 10 times at once with one bearer: one new token, and only it works', async () => {
    const { t } = a
    const acct = await t.signup()
    const rs = await Promise.all(Array.from({ length: 10 }, () => t.req('POST', '/v1/token/rotate', { token: acct.token })))
    const ok = rs.filter((r) => r.status === 200)
    expect(ok).toHaveLength(1)
    expect(rs.filter((r) => r.status === 401)).toHaveLength(9)
    expect((await t.req('GET', '/v1/balance', { token: acct.token })).status).toBe(401)
    expect((await t.req('GET', '/v1/balance', { token: ok[0]!.body.token })).status).toBe(200)
    // No token minted by a losing rotation resolves to the account.
    const owner = (await t.s.ctx.redis.hget(t.s.ctx.keys.account(acct.account_id), 'owner'))!
    const mapped: string[] = []
    let cursor = '0'
    do {
      const [next, keys] = await t.redis.scan(cursor, 'MATCH', `${t.prefix}:tok:*`, 'COUNT', 1000)
      cursor = next
      for (const k of keys) if ((await t.redis.get(k)) === `${acct.account_id}|`) mapped.push(k)
    } while (cursor !== '0')
    expect(mapped).toHaveLength(1)
    expect(mapped[0]!.endsWith(owner)).toBe(true)
  })

  test('a topup proposal approved 10 times at once: one charge, approved once', async () => {
    const { t, stripe } = a
    const acct = await t.signup()
    await consentStripe(a, acct.token, { threshold: 100, refill: 1000, ceiling: 100000 })
    const agent = (await t.req('POST', '/v1/agents', { token: acct.token, body: { name: 'asker' } })).body
    const prop = await t.req('POST', '/v1/proposals', { token: agent.token, body: { kind: 'topup', value: 1000, reason: 'more' } })
    expect(prop.status).toBe(201)
    stripe.chargeLatencyMs = 30
    let rs
    try {
      rs = await Promise.all(Array.from({ length: 10 }, () => t.req('POST', `/v1/proposals/${prop.body.id}/approve`, { token: acct.token })))
    } finally {
      stripe.chargeLatencyMs = 0
    }
    expect(rs.filter((r) => r.status === 200)).toHaveLength(1)
    expect(rs.filter((r) => r.status === 409)).toHaveLength(9)
    expect((await t.req('GET', `/v1/proposals/${prop.body.id}`, { token: acct.token })).body.status).toBe('approved')
    expect([...stripe.paymentIntents.values()].filter((p) => p.metadata.acct === acct.account_id)).toHaveLength(1)
    await exact(acct.account_id, 1500)
  })
})

describe('the live-agent limit', () => {
  test('10 creates at once for the last place: exactly one gets it; a revoke frees exactly one more', async () => {
    const { t } = a
    const o = await t.signup()
    const create = (name: string) => t.req('POST', '/v1/agents', { token: o.token, body: { name } })
    for (let i = 0; i < 999; i += 111) {
      const rs = await Promise.all(Array.from({ length: Math.min(111, 999 - i) }, (_, j) => create(`a${i + j}`)))
      expect(rs.every((r) => r.status === 201)).toBe(true)
    }
    const last = await Promise.all(Array.from({ length: 10 }, (_, i) => create(`last${i}`)))
    expect(last.filter((r) => r.status === 201)).toHaveLength(1)
    expect(last.filter((r) => r.status === 409 && r.body.error === 'CONFLICT')).toHaveLength(9)
    const first = (await t.req('GET', '/v1/agents', { token: o.token })).body.agents[0]
    expect((await t.req('DELETE', `/v1/agents/${first.id}`, { token: o.token })).status).toBe(200)
    const again = await Promise.all(Array.from({ length: 10 }, (_, i) => create(`again${i}`)))
    expect(again.filter((r) => r.status === 201)).toHaveLength(1)
    const agents = (await t.req('GET', '/v1/agents', { token: o.token })).body.agents as { state: string }[]
    expect(agents.filter((x) => x.state !== 'revoked')).toHaveLength(1000)
  })
})

describe('a parked payment whose refund answer was lost', () => {
  test('is not approved afterwards: the money is never both refunded and credited', async () => {
    const { t, stripe } = a
    const acct = await t.signup()
    expect((await deliver(t, await paidPack(acct.token))).body.result).toBe('credited') // 20500
    expect((await deliver(t, await paidPack(acct.token))).body.result).toBe('parked')
    const p = (await t.req('GET', '/admin/parked', { token: ADMIN })).body.parked.find((x: { account_id: string }) => x.account_id === acct.account_id)
    relay.loseRefundAnswers = true
    let rejected
    try {
      rejected = await t.req('POST', `/admin/parked/${p.id}/reject`, { token: ADMIN })
    } finally {
      relay.loseRefundAnswers = false
    }
    // Stripe made the refund; the app could not know.
    expect(stripe.refunds.filter((r) => r.payment_intent === p.charge_id).length).toBeGreaterThan(0)
    expect(rejected.status).toBe(409)
    const listed = (await t.req('GET', '/admin/parked', { token: ADMIN })).body.parked.find((x: { id: string }) => x.id === p.id)
    expect(listed.state).toBe('refund_unknown')
    const approve = await t.req('POST', `/admin/parked/${p.id}/approve`, { token: ADMIN })
    expect(approve.status).toBe(409)
    // Asking again settles it: the same refund (one idempotency key), rejected once.
    const again = await Promise.all(Array.from({ length: 5 }, () => t.req('POST', `/admin/parked/${p.id}/reject`, { token: ADMIN })))
    expect(again.filter((r) => r.status === 200).map((r) => r.body.state)).toEqual(['rejected'])
    expect(again.filter((r) => r.status === 409)).toHaveLength(4)
    expect(new Set(stripe.refunds.filter((r) => r.payment_intent === p.charge_id).map((r) => r.id)).size).toBe(1)
    await exact(acct.account_id, 20500)
  })
})
