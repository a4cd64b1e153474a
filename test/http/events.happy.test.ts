/**
 * Every owner event kind reaches the account's webhook endpoint exactly once, signed per the
 * Standard Webhooks spec (verified by the receiver with the `standardwebhooks` library), each
 * produced by its real state change: agent kill/revive/revoke (agent-state.lua), a breaker-free
 * low balance, a cap refusal and a cap's warning level (debit.lua), a sandbox auto-refill and a parked pack
 * (credit-topup.lua), a founder's capability pause and support move. `refill.failed` is produced
 * here through emitEvent() (the sandbox never declines a saved card); its real path, a Stripe
 * decline, is in events.stripe.happy.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { calls, eventDeliveries } from '../../src/db/schema'
import { emitEvent } from '../../src/events/emit'
import { persistEvents } from '../../src/events/store'
import { EVENT_TYPES } from '../../src/events/types'
import { startReceiver, type Receiver } from '../fakes/webhook-receiver'
import { deliverAll, subscribe } from '../helpers/events'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'
import { GOOD_CARD, consentSandbox, pathOf, postForm } from '../helpers/money'

const ADMIN = 'founder-token-0123456789abcdef'
let t: TestApp
let hooks: Receiver
let onlyKills: Receiver
beforeAll(async () => {
  hooks = startReceiver()
  onlyKills = startReceiver()
  t = await startTestApp({ env: { ADMIN_TOKEN: ADMIN, WEBHOOKS_ALLOW_INSECURE_LOOPBACK: '1', LOW_BALANCE_ALERT: '250', DEFAULT_BALANCE_CAP: '3000' } })
})
afterAll(async () => {
  await t.close()
  hooks.stop()
  onlyKills.stop()
})

const founder = (method: string, path: string, body?: unknown) => t.req(method, path, { token: ADMIN, body })

describe('owner events over webhooks', () => {
  test('every kind, from its own state change, delivered once with a valid signature', async () => {
    const owner = await t.signup()
    const acct = owner.account_id
    const saved = await subscribe(t, owner.token, hooks)
    expect(saved.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{40,}$/)
    expect(saved.events).toBeNull()

    // agent.killed / agent.revived / agent.revoked
    const bot = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'bot' } })).body
    const temp = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'temp' } })).body
    expect((await t.req('POST', `/v1/agents/${bot.id}/kill`, { token: owner.token })).status).toBe(200)
    expect((await t.req('POST', `/v1/agents/${bot.id}/revive`, { token: owner.token })).status).toBe(200)
    expect((await t.req('DELETE', `/v1/agents/${temp.id}`, { token: owner.token })).status).toBe(200)

    // balance.low: 500 → 200 crosses the alert at 250 (no mandate yet)
    expect((await t.req('POST', '/v1/call/test.pricey', { token: owner.token, body: { q: 'x' } })).body.balance).toBe(200)
    // refill.succeeded: with auto-refill on, a debit under its threshold refills in the background
    await consentSandbox(t, owner.token, { threshold: 199, refill: 1000, ceiling: 5000 })
    // cap.threshold: today's spend is 300; with a cap of 608 the next 5 credits cross its 50% (304)
    await t.req('PUT', '/v1/policies', { token: owner.token, body: { account: { daily_cap: 608 } } })
    expect((await t.req('POST', '/v1/call/test.echo', { token: owner.token, body: { q: 'x' } })).body.balance).toBe(195)
    await t.s.refiller.idle()
    // payment.parked: a 5000-credit pack would pass the 3000 balance cap
    const b = await t.req('GET', '/v1/balance', { token: owner.token })
    expect(b.body.balance).toBe(1195)
    const pack = await postForm(t, pathOf(b.body.links.packs[0].url), { card: GOOD_CARD }, { accept: 'application/json' })
    expect(pack.body).toMatchObject({ error: 'BALANCE_CAP', parked: true })
    // cap.reached: today's spend is 305; a cap of 305 refuses the next call, and tells the owner once
    await t.req('PUT', '/v1/policies', { token: owner.token, body: { account: { daily_cap: 305 } } })
    expect((await t.req('POST', '/v1/call/test.echo', { token: owner.token, body: { q: 'x' } })).body.error).toBe('DAILY_CAP_REACHED')
    expect((await t.req('POST', '/v1/call/test.echo', { token: owner.token, body: { q: 'y' } })).body.error).toBe('DAILY_CAP_REACHED')
    // capability.paused: the founder pauses a capability this account used
    await flushAll(t)
    for (let i = 0; i < 50 && (await t.s.db.db.select().from(calls).where(eq(calls.accountId, acct))).length < 2; i++) {
      await Bun.sleep(10)
      await flushAll(t)
    }
    expect((await founder('POST', '/admin/capabilities/test.pricey/pause')).status).toBe(200)
    expect((await founder('POST', '/admin/capabilities/test.pricey/resume')).status).toBe(200)
    // support.updated: the founder moves the account's problem
    const problem = await t.req('POST', '/v1/support', { token: owner.token, body: { category: 'billing', summary: 'parked pack' } })
    expect((await founder('PATCH', `/admin/support/${problem.body.id}`, { status: 'acknowledged', note: 'on it' })).status).toBe(200)
    // proposal.created / proposal.decided: the bot asks for a higher cap, the owner declines
    const proposal = await t.req('POST', '/v1/proposals', { token: bot.token, body: { kind: 'raise_daily_cap', value: 50, reason: 'more' } })
    expect((await t.req('POST', `/v1/proposals/${proposal.body.id}/decline`, { token: owner.token })).body.status).toBe('declined')
    // refill.failed: emit → deliver (its producer's real path needs a declining card: Stripe mode)
    await emitEvent(t.s.ctx, acct, 'refill.failed', { credits: 1000, reason: 'authentication_required', message: 'needs the card holder', mode: 'auto' })
    // payment.reversed: its producer (reverse-charge.lua) runs on a Stripe refund or dispute: test/http/stripe.reversal.test.ts
    await emitEvent(t.s.ctx, acct, 'payment.reversed', { charge_id: 'pi_x', cause: 'refund', credits: 10, taken: 10, unrecovered: 0, balance: 1185, reversed_cents: 1, mandate_disabled: false })

    await deliverAll(t)
    const got = hooks.unique()
    expect(new Set(got.map((e) => e.type))).toEqual(new Set(EVENT_TYPES))
    // Once each: one request per event id (the receiver was up), every signature valid.
    expect(hooks.requests.every((r) => r.verified)).toBe(true)
    expect(hooks.requests.length).toBe(got.length)
    for (const r of hooks.requests) {
      const body = JSON.parse(r.body)
      expect(r.headers['webhook-id']).toBe(body.id)
      expect(Math.abs(Number(r.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(300)
      expect(body.account_id).toBe(acct)
    }
    const one = (type: string) => {
      const list = hooks.ofType(type)
      expect(list).toHaveLength(1)
      return list[0]!.data
    }
    expect(one('agent.killed')).toMatchObject({ agent_id: bot.id, name: 'bot', reason: 'operator', via: 'api' })
    expect(one('agent.revived')).toMatchObject({ agent_id: bot.id, was_killed_by: 'operator' })
    expect(one('agent.revoked')).toMatchObject({ agent_id: temp.id, name: 'temp' })
    // Deliveries are not ordered (each carries its timestamp): sorted here by balance.
    expect(hooks.ofType('balance.low').map((e) => e.data).sort((x, y) => Number(y.balance) - Number(x.balance))).toEqual([
      expect.objectContaining({ balance: 200, threshold: 250, auto_refill: false, agent_id: null }),
      expect.objectContaining({ balance: 195, threshold: 199, auto_refill: true }),
    ])
    expect(one('refill.succeeded')).toMatchObject({ credits: 1000, balance: 1195, mode: 'auto' })
    expect(one('payment.parked')).toMatchObject({ credits: 5000, balance: 1195, balance_cap: 3000 })
    expect(one('cap.reached')).toMatchObject({ scope: 'account', cap: 305, spent: 305, price: 5, target: 'test.echo' })
    expect(one('cap.reached').resets_at).toMatch(/T16:00:00\.000Z$/)
    expect(one('cap.threshold')).toMatchObject({ scope: 'account', agent_id: null, cap_kind: 'daily_cap', percent: 50, cap: 608, spent: 305 })
    expect(one('cap.threshold').resets_at).toMatch(/T16:00:00\.000Z$/)
    expect(one('capability.paused')).toEqual({ slug: 'test.pricey', reason: 'founder' })
    expect(one('support.updated')).toMatchObject({ problem_id: problem.body.id, status: 'acknowledged', note: 'on it', status_url: problem.body.status_url })
    expect(one('refill.failed')).toMatchObject({ reason: 'authentication_required', credits: 1000 })

    // The delivery log: every attempt delivered at once, the endpoint's answer recorded.
    const log = (await t.req('GET', '/v1/webhooks/deliveries', { token: owner.token })).body.deliveries
    expect(log).toHaveLength(got.length)
    for (const d of log) expect(d).toMatchObject({ status: 'delivered', attempts: 1, last_response_code: 204, next_retry_at: null })
    // The same events are the account's feed.
    const feed = (await t.req('GET', '/v1/events?limit=200', { token: owner.token })).body.events
    expect(feed.map((e: { id: string }) => e.id).sort()).toEqual(got.map((e) => e.id).sort())

    // An event written twice (an outbox entry redelivered after a crash) schedules nothing new.
    const before = (await t.s.db.db.select().from(eventDeliveries).where(eq(eventDeliveries.accountId, acct))).length
    await persistEvents(t.s.db.db, feed.map((e: { id: string; type: never; timestamp: string; data: never }) => ({ id: e.id, accountId: acct, type: e.type, at: Date.parse(e.timestamp), data: e.data })))
    expect((await t.s.db.db.select().from(eventDeliveries).where(eq(eventDeliveries.accountId, acct))).length).toBe(before)
    await deliverAll(t)
    expect(hooks.requests.length).toBe(got.length)
  })

  test('an endpoint gets only the kinds it asked for', async () => {
    const owner = await t.signup()
    await subscribe(t, owner.token, onlyKills, ['agent.killed'])
    const a = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'x' } })).body
    await t.req('POST', `/v1/agents/${a.id}/kill`, { token: owner.token })
    await t.req('POST', `/v1/agents/${a.id}/revive`, { token: owner.token })
    await deliverAll(t)
    expect(onlyKills.unique().map((e) => e.type)).toEqual(['agent.killed'])
    // The revive is still on the account's feed.
    const feed = (await t.req('GET', '/v1/events', { token: owner.token })).body.events.map((e: { type: string }) => e.type)
    expect(feed).toEqual(['agent.revived', 'agent.killed', 'agent.created'])
  })

  test('an agent token cannot see or redirect the owner’s events', async () => {
    const owner = await t.signup()
    const a = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'nosy' } })).body
    for (const [method, path] of [['PUT', '/v1/webhooks'], ['GET', '/v1/webhooks'], ['DELETE', '/v1/webhooks'], ['GET', '/v1/webhooks/deliveries'], ['GET', '/v1/events']] as const) {
      const r = await t.req(method, path, { token: a.token, body: method === 'PUT' ? { url: 'https://example.com/h' } : undefined })
      expect([path, r.status, r.body.error]).toEqual([path, 403, 'FORBIDDEN'])
    }
  })
})
