/**
 * Time boundaries, hit exactly with the manual clock: the HKT day a charge counts on when its call
 * straddles midnight, expiries at their exact millisecond, and what an expiry gives back.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { LlmFake } from '../fakes/llm'
import type { TestApp } from '../helpers/harness'
import { startMeteredApp } from '../helpers/metering'
import { flushAll } from '../helpers/ledger'
import { chartBars as bars, ConsoleClient } from '../helpers/console'

let t: TestApp
let llm: LlmFake
beforeAll(async () => {
  ;({ t, llm } = await startMeteredApp())
})
afterAll(async () => {
  await t?.close()
})


const create = (token: string, body: Record<string, unknown>) => t.req('POST', '/v1/agents', { token, body })
/** A paid call of the metered catalog's one capability. */
const chat = (token: string) =>
  t.req('POST', '/v1/call/llm.test.chat', { token, body: { model: 'gpt-test', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] } })

describe('a metered call that straddles the HKT midnight', () => {
  test('its charge is spend of the day it was debited on, in the daily window and in the console chart alike', async () => {
    const before = Date.UTC(2026, 2, 9, 15, 59, 59, 0) // 23:59:59 HKT, 2026-03-09
    t.clock.set(before)
    const owner = await t.signup()
    // The provider answers only once midnight has passed.
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const answer = llm.handler
    t.fake.handler = async (req, seen) => {
      await gate
      return answer.call(llm, req, seen)
    }
    llm.usage = { input: 100, cached: 0, output: 16_000 } // 100×150 + 16000×600 = 9.615M µcredits → 9
    try {
      const call = t.req('POST', '/v1/call/llm.test.chat', {
        token: owner.token,
        body: { model: 'gpt-test', max_tokens: 16_384, messages: [{ role: 'user', content: 'hi' }] },
      })
      await Bun.sleep(100)
      // The reservation is in day 1's window.
      expect((await t.req('GET', '/v1/balance', { token: owner.token })).body.spent_today).toBeGreaterThan(9)
      t.clock.set(Date.UTC(2026, 2, 9, 16, 0, 2)) // 00:00:02 HKT, 2026-03-10
      release()
      const r = await call
      expect(r.status).toBe(200)
      expect(r.body.charged).toBe(9)
    } finally {
      t.fake.handler = llm.handler
    }
    // Day 2's window holds none of it: the settle took the release off day 1's.
    expect((await t.req('GET', '/v1/balance', { token: owner.token })).body.spent_today).toBe(0)
    await Bun.sleep(20)
    await flushAll(t)
    const c = new ConsoleClient(t)
    await c.signIn(owner.token)
    const page = await c.get('/console')
    expect(page.status).toBe(200)
    expect(bars(page.text)).toEqual({ '2026-03-09': 9 })
  })
})

describe('agent expiry', () => {
  test('a token is good up to the millisecond before expires_at and refused from expires_at on', async () => {
    const start = Date.UTC(2026, 5, 1, 3, 0, 0)
    t.clock.set(start)
    const owner = await t.signup()
    const root = (await create(owner.token, { name: 'root', budget: 100 })).body
    const child = (await create(root.token, { name: 'short', budget: 20, ttl_s: 60 })).body
    expect(child.expires_at).toBe(new Date(start + 60_000).toISOString())
    t.clock.set(start + 59_999)
    expect((await chat(child.token)).status).toBe(200)
    expect((await t.req('GET', '/v1/balance', { token: child.token })).status).toBe(200)
    t.clock.set(start + 60_000)
    expect((await chat(child.token)).body).toMatchObject({ error: 'AGENT_REVOKED', reason: 'expired' })
    expect((await t.req('GET', '/v1/balance', { token: child.token })).body).toMatchObject({ error: 'AGENT_REVOKED', reason: 'expired' })
  })

  // Expiry has no writer: the create that next weighs the parent's carve gives the expired
  // child's back first (release-expired.lua), once.
  test("an expired sub-agent's unspent budget goes back to its parent, as a revoked one's does", async () => {
    const start = Date.UTC(2026, 5, 2, 3, 0, 0)
    t.clock.set(start)
    const owner = await t.signup()
    const root = (await create(owner.token, { name: 'root', budget: 100 })).body
    const first = await create(root.token, { name: 'first', budget: 80, ttl_s: 60 })
    expect(first.status).toBe(201)
    // While it lives, its budget is carved from the root's.
    expect((await create(root.token, { name: 'meanwhile', budget: 80 })).body).toMatchObject({ error: 'POLICY_DENIED', rule: 'exceeds_parent', field: 'budget', limit: 20 })
    // Once it has expired it can spend nothing more: the root has its 100 to hand out again.
    t.clock.set(start + 60_000)
    expect((await chat(first.body.token)).body).toMatchObject({ error: 'AGENT_REVOKED', reason: 'expired' })
    const second = await create(root.token, { name: 'second', budget: 80 })
    expect(second.body).toMatchObject({ budget: 80, parent_id: root.id })
  })
})

describe('vault link expiry', () => {
  test('a link works up to the millisecond before expires_at and is LINK_INVALID from expires_at on', async () => {
    const start = Date.UTC(2026, 5, 3, 3, 0, 0)
    t.clock.set(start)
    const owner = await t.signup()
    const link = await t.req('POST', '/v1/keys/link', { token: owner.token, body: { provider: 'anthropic' } })
    expect(link.status).toBe(201)
    expect(link.body.expires_at).toBe(new Date(start + 600_000).toISOString())
    const path = new URL(link.body.url).pathname
    t.clock.set(start + 599_999)
    expect((await t.req('GET', path)).status).toBe(200)
    t.clock.set(start + 600_000)
    const dead = await t.req('POST', path, { body: { key: 'sk-ant-a-key-that-is-long-enough-0000' }, headers: { accept: 'application/json' } })
    expect(dead.status).toBe(400)
    expect(dead.body).toMatchObject({ error: 'LINK_INVALID' })
  })
})

describe('proposal, console session and statement edges', () => {
  test('a proposal can be approved at the millisecond before its 24 h are up; from then on it is expired', async () => {
    const start = Date.UTC(2026, 5, 4, 3, 0, 0)
    t.clock.set(start)
    const owner = await t.signup()
    const agent = (await create(owner.token, { name: 'asker', daily_cap: 10 })).body
    const propose = (value: number) => t.req('POST', '/v1/proposals', { token: agent.token, body: { kind: 'raise_daily_cap', value, reason: 'more' } })
    const early = (await propose(20)).body
    const late = (await propose(30)).body
    expect(early.expires_at).toBe(new Date(start + 86_400_000).toISOString())
    t.clock.set(start + 86_399_999)
    expect((await t.req('POST', `/v1/proposals/${early.id}/approve`, { token: owner.token, body: {} })).body).toMatchObject({ status: 'approved' })
    t.clock.set(start + 86_400_000)
    expect((await t.req('POST', `/v1/proposals/${late.id}/approve`, { token: owner.token, body: {} })).body).toMatchObject({ error: 'CONFLICT', status: 'expired' })
  })

  test('a console session stands up to the millisecond before its 12 h and is gone from then on', async () => {
    const start = Date.UTC(2026, 5, 5, 3, 0, 0)
    t.clock.set(start)
    const owner = await t.signup()
    const c = new ConsoleClient(t)
    await c.signIn(owner.token)
    t.clock.set(start + 12 * 3_600_000 - 1)
    expect((await c.get('/console')).status).toBe(200)
    t.clock.set(start + 12 * 3_600_000)
    expect((await c.get('/console')).status).not.toBe(200)
  })

  test('the statement holds an entry at exactly `from` and none at exactly `to`', async () => {
    const at = Date.UTC(2026, 1, 28, 16, 0, 0) // 00:00 HKT, 2026-03-01
    t.clock.set(at)
    const owner = await t.signup()
    await flushAll(t)
    const entries = async (q: string) =>
      (await t.req('GET', `/v1/ledger?${q}`, { token: owner.token })).text.trim().split('\n').map((l) => JSON.parse(l)).filter((e) => e.type === 'entry')
    const iso = new Date(at).toISOString()
    expect((await entries(`from=${iso}&to=${new Date(at + 1).toISOString()}`)).map((e) => e.kind)).toEqual(['grant'])
    expect(await entries(`to=${iso}`)).toEqual([])
    expect(await entries(`from=2026-03-01`)).toEqual([])
  })
})
