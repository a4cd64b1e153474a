/**
 * Threshold warnings (docs/api.md §13a): a debit whose spend crosses a warning level of the
 * account's or an agent's daily cap, or of an agent's lifetime budget, tells the owner once per
 * level per period with a `cap.threshold` event, decided in the debit script — under 50 concurrent
 * calls racing across a level too; none when the levels are off; a refund and a second crossing
 * tell nothing new; the next HKT day, or a changed cap, arms the levels again. Delivered as every
 * owner event is: signed webhooks and the linked Telegram chat.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { nextHktMidnight } from '../../src/clock'
import { startFakeTelegram, textUpdate, type FakeTelegram } from '../fakes/telegram'
import { startReceiver, type Receiver } from '../fakes/webhook-receiver'
import { deliverAll, subscribe, telegramEnv, telegramPost } from '../helpers/events'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'

let t: TestApp
let tg: FakeTelegram
let hooks: Receiver
beforeAll(async () => {
  tg = startFakeTelegram()
  hooks = startReceiver()
  t = await startTestApp({ env: { ...telegramEnv(tg), WEBHOOKS_ALLOW_INSECURE_LOOPBACK: '1' } })
})
afterAll(async () => {
  await t.close()
  tg.stop()
  hooks.stop()
})

interface Warning {
  scope: string
  agent_id: string | null
  cap_kind: string
  percent: number
  cap: number
  spent: number
  resets_at: string | null
  call_id: string
}

/** The account's cap.threshold events, from its event feed (after the flusher moved them). */
async function warnings(token: string): Promise<Warning[]> {
  await flushAll(t)
  const feed = (await t.req('GET', '/v1/events?limit=200', { token })).body.events as { type: string; data: Warning }[]
  return feed.filter((e) => e.type === 'cap.threshold').map((e) => e.data)
}
const brief = (w: Warning[]) =>
  w.map((x) => `${x.scope}:${x.agent_id ?? '-'}:${x.cap_kind}:${x.percent}`).sort()

const call = (token: string, slug = 'test.echo') => t.req('POST', `/v1/call/${slug}`, { token, body: { q: 'x' } })
const burst = (token: string, n: number, slug = 'test.echo') => Promise.all(Array.from({ length: n }, () => call(token, slug)))
const put = (token: string, body: unknown) => t.req('PUT', '/v1/policies', { token, body })
const agentOf = async (token: string, body: Record<string, unknown>) => (await t.req('POST', '/v1/agents', { token, body: { name: 'w', ...body } })).body as { id: string; token: string }

describe('cap.threshold', () => {
  test('the default levels; 50 concurrent calls crossing 50% of the account cap tell it exactly once', async () => {
    const owner = await t.signup()
    expect((await t.req('GET', '/v1/policies', { token: owner.token })).body.account.thresholds).toEqual([50, 80, 100])
    expect((await put(owner.token, { account: { daily_cap: 400 } })).status).toBe(200)
    const replies = await burst(owner.token, 50)
    expect(replies.every((r) => r.status === 200)).toBe(true)
    const w = await warnings(owner.token)
    expect(w).toHaveLength(1)
    const callIds = new Set(replies.map((r) => r.body.call_id))
    expect(callIds.has(w[0]!.call_id)).toBe(true)
    // 5 credits a call from 0: the debit that crossed 200 left the spend at exactly 200.
    expect(w[0]).toEqual({
      scope: 'account', agent_id: null, cap_kind: 'daily_cap', percent: 50, cap: 400, spent: 200,
      resets_at: new Date(nextHktMidnight(t.clock.now())).toISOString(), call_id: w[0]!.call_id,
    })
  })

  test("an agent's daily cap: 50, 80 and 100 once each under 50 concurrent calls; the next day tells them again, and the budget's level once", async () => {
    const owner = await t.signup()
    const agent = await agentOf(owner.token, { daily_cap: 100, budget: 400 })
    const first = await burst(agent.token, 50)
    expect(first.filter((r) => r.status === 200)).toHaveLength(20)
    expect(first.filter((r) => r.body.rule === 'agent_daily_cap')).toHaveLength(30)
    let w = await warnings(owner.token)
    expect(brief(w)).toEqual([`agent:${agent.id}:daily_cap:100`, `agent:${agent.id}:daily_cap:50`, `agent:${agent.id}:daily_cap:80`])
    expect(w.find((x) => x.percent === 80)).toMatchObject({ cap: 100, spent: 80 })
    // The budget (100 of 400 spent: 25%) and the account's default cap have no level crossed yet.

    t.clock.advance(86_400_000)
    const second = await burst(agent.token, 50)
    expect(second.filter((r) => r.status === 200)).toHaveLength(20)
    w = await warnings(owner.token)
    const budget = w.filter((x) => x.cap_kind === 'budget')
    expect(budget).toHaveLength(1)
    expect(budget[0]).toMatchObject({ scope: 'agent', agent_id: agent.id, percent: 50, cap: 400, spent: 200, resets_at: null })
    // A new HKT day: its own three daily levels.
    expect(w.filter((x) => x.cap_kind === 'daily_cap')).toHaveLength(6)
  })

  test("a sub-agent's spend crosses its ancestor's levels: the event names the ancestor", async () => {
    const owner = await t.signup()
    const parent = await agentOf(owner.token, { budget: 200 })
    const child = (await t.req('POST', '/v1/agents', { token: parent.token, body: { name: 'child', budget: 150 } })).body as { id: string; token: string }
    await burst(child.token, 20)   // 100 credits: 50% of the parent's 200, 66% of the child's 150
    expect(brief(await warnings(owner.token))).toEqual([`agent:${child.id}:budget:50`, `agent:${parent.id}:budget:50`].sort())
  })

  test('a refund that takes the spend back under a level, then a second crossing, tell nothing new', async () => {
    const owner = await t.signup()
    await put(owner.token, { account: { daily_cap: 100, thresholds: [50] } })
    for (let i = 0; i < 9; i++) expect((await call(owner.token)).status).toBe(200)   // 45
    const failed = await call(owner.token, 'test.fail')   // 45 → 50 crosses, then refunded: 45
    expect(failed.body).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true })
    expect((await t.req('GET', '/v1/balance', { token: owner.token })).body.spent_today).toBe(45)
    expect((await call(owner.token)).status).toBe(200)   // 45 → 50 again
    const w = await warnings(owner.token)
    expect(w).toHaveLength(1)
    expect(w[0]).toMatchObject({ percent: 50, spent: 50, call_id: failed.body.call_id })
  })

  test('custom levels: stored ascending; one debit past two levels tells both; a changed cap arms them again', async () => {
    const owner = await t.signup()
    const r = await put(owner.token, { account: { daily_cap: 350, thresholds: [80, 20] } })
    expect(r.body.account.thresholds).toEqual([20, 80])
    expect((await call(owner.token, 'test.pricey')).status).toBe(200)   // 0 → 300 of 350: 85%
    expect(brief(await warnings(owner.token))).toEqual(['account:-:daily_cap:20', 'account:-:daily_cap:80'])
    // A cap of 1000 is a new period, but 300 → 305 crosses none of its levels (200, 800).
    await put(owner.token, { account: { daily_cap: 1000 } })
    expect((await call(owner.token, 'test.echo')).status).toBe(200)   // 305 of 1000
    expect(await warnings(owner.token)).toHaveLength(2)
    await put(owner.token, { account: { daily_cap: 381 } })   // 305 of 381 = 80.05%: already past, nothing told
    expect((await call(owner.token, 'test.echo')).status).toBe(200)
    expect(await warnings(owner.token)).toHaveLength(2)
    await put(owner.token, { account: { daily_cap: 390 } })   // 80% = 312: 310 → 315 crosses it under the new cap
    expect((await call(owner.token, 'test.echo')).status).toBe(200)   // 315
    const w = await warnings(owner.token)
    expect(w).toHaveLength(3)
    expect(w.find((x) => x.cap === 390)).toMatchObject({ percent: 80, spent: 315 })
  })

  test('levels off ([]): no warning at any level, while the cap itself still refuses and tells', async () => {
    const owner = await t.signup()
    await put(owner.token, { account: { thresholds: [] } })
    expect((await t.req('GET', '/v1/policies', { token: owner.token })).body.account.thresholds).toEqual([])
    const agent = await agentOf(owner.token, { daily_cap: 50, budget: 100 })
    const replies = await burst(agent.token, 50)
    expect(replies.filter((r) => r.status === 200)).toHaveLength(10)
    await flushAll(t)
    const types = ((await t.req('GET', '/v1/events?limit=200', { token: owner.token })).body.events as { type: string }[]).map((e) => e.type)
    expect(types).toContain('cap.reached')
    expect(types).not.toContain('cap.threshold')
    // null brings the default back.
    expect((await put(owner.token, { account: { thresholds: null } })).body.account.thresholds).toEqual([50, 80, 100])
  })

  test('delivered through a signed webhook and the linked Telegram chat', async () => {
    const owner = await t.signup()
    await subscribe(t, owner.token, hooks, ['cap.threshold'])
    const chat = 7001
    const link = await t.req('POST', '/v1/operator/link', { token: owner.token })
    await telegramPost(t, textUpdate(chat, 41, link.body.command))
    const agent = await agentOf(owner.token, { daily_cap: 20 })
    for (let i = 0; i < 2; i++) expect((await call(agent.token)).status).toBe(200)   // 10 of 20: 50%
    await deliverAll(t)
    const got = hooks.ofType('cap.threshold').filter((e) => e.data.agent_id === agent.id)
    expect(got).toHaveLength(1)
    expect(hooks.requests.filter((r) => JSON.parse(r.body).data?.agent_id === agent.id).every((r) => r.verified)).toBe(true)
    expect(got[0]!.data).toMatchObject({ scope: 'agent', cap_kind: 'daily_cap', percent: 50, cap: 20, spent: 10 })
    const text = `Agent ${agent.id} has spent 50% of its daily cap (10 of 20 credits). It resets at ${got[0]!.data.resets_at}. Raise it with /cap ${agent.id} <credits>.`
    expect(tg.to(chat)).toContain(text)
  })
})
