/**
 * Temporary raises in the operator chat (docs/api.md §13b): `/approve <id> 1h [note]` approves for
 * an hour (m, h, d suffixes), says until when, and the decision's message in the chat names the
 * lapse; the raise then ends by itself. A duration out of bounds is refused with the service's
 * message and decides nothing; a second word that is not a duration stays part of the note.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startFakeTelegram, textUpdate, type FakeTelegram } from '../fakes/telegram'
import { deliverAll, telegramEnv, telegramPost } from '../helpers/events'
import { startTestApp, type TestApp } from '../helpers/harness'
import { hktDay } from '../../src/clock'

let t: TestApp
let tg: FakeTelegram
const NOON = (hktDay(Date.now()) + 2) * 86400_000 - 8 * 3600_000 + 12 * 3600_000
beforeAll(async () => {
  tg = startFakeTelegram()
  t = await startTestApp({ env: telegramEnv(tg) })
  t.clock.set(NOON)
})
afterAll(async () => {
  await t.close()
  tg.stop()
})

const CHAT = 7301
const USER = 93

async function say(text: string): Promise<string> {
  const before = tg.to(CHAT).length
  expect((await telegramPost(t, textUpdate(CHAT, USER, text))).status).toBe(200)
  const replies = tg.to(CHAT).slice(before)
  expect(replies).toHaveLength(1)
  return replies[0]!
}

const call = (token: string) => t.req('POST', '/v1/call/test.cheap', { token, body: { q: `q${Math.random()}` } })

describe('/approve <id> <duration>', () => {
  test('approves for an hour, says until when, and the cap goes back at the lapse', async () => {
    const o = await t.signup()
    const a = (await t.req('POST', '/v1/agents', { token: o.token, body: { name: 'crawler', daily_cap: 1 } })).body
    await say((await t.req('POST', '/v1/operator/link', { token: o.token })).body.command)
    expect((await call(a.token)).status).toBe(200)
    const p = (await t.req('POST', '/v1/proposals', { token: a.token, body: { kind: 'raise_daily_cap', value: 3, reason: 'a burst' } })).body

    // Out of bounds: the service's refusal, nothing decided.
    expect(await say(`/approve ${p.id} 31d`)).toContain('for_s')
    expect(await say(`/approve ${p.id} 0m`)).toContain('for_s')
    expect((await t.req('GET', `/v1/proposals/${p.id}`, { token: o.token })).body.status).toBe('pending')

    const until = new Date(NOON + 3600_000).toISOString()
    expect(await say(`/approve ${p.id} 1h enjoy`)).toBe(`Proposal ${p.id} is approved until ${until}, then it lapses by itself.`)
    expect((await t.req('GET', `/v1/proposals/${p.id}`, { token: a.token })).body).toMatchObject({ decided_via: 'chat', note: 'enjoy', lapses_at: until })
    await deliverAll(t)
    expect(tg.to(CHAT)).toContain(`Proposal ${p.id} (a daily cap of 3 credits for agent ${a.id}) is approved until ${until}, then it lapses by itself (chat): enjoy.`)

    expect((await call(a.token)).status).toBe(200)
    // The account's own cap, raised for a day: /status says until when.
    const acct = (await t.req('POST', '/v1/proposals', { token: o.token, body: { kind: 'raise_daily_cap', value: 30000, reason: 'launch day' } })).body
    expect(await say(`/approve ${acct.id} 1d`)).toContain(`until ${new Date(NOON + 86400_000).toISOString()}`)
    expect(await say('/status')).toContain(`of 30000 (resets `)
    expect(await say('/status')).toContain(`; raised until ${new Date(NOON + 86400_000).toISOString()}, then the default`)
    t.clock.set(NOON + 3600_000)
    expect((await call(a.token)).body).toMatchObject({ rule: 'agent_daily_cap', cap: 1 })
  })

  test('30m and 2d are durations; a word that is not one stays in the note (a lasting approval)', async () => {
    const o = await t.signup()
    const a = (await t.req('POST', '/v1/agents', { token: o.token, body: { name: 'b', daily_cap: 1 } })).body
    await say((await t.req('POST', '/v1/operator/link', { token: o.token })).body.command)
    const mk = async () => (await t.req('POST', '/v1/proposals', { token: a.token, body: { kind: 'raise_daily_cap', value: 2, reason: 'r' } })).body.id as string
    const p1 = await mk()
    expect(await say(`/approve ${p1} 30m`)).toContain(`until ${new Date(t.clock.now() + 1800_000).toISOString()}`)
    const p2 = await mk()
    expect(await say(`/approve ${p2} 2d`)).toContain(`until ${new Date(t.clock.now() + 2 * 86400_000).toISOString()}`)
    const p3 = await mk()
    expect(await say(`/approve ${p3} soon please`)).toBe(`Proposal ${p3} is approved.`)
    expect((await t.req('GET', `/v1/proposals/${p3}`, { token: o.token })).body).toMatchObject({ note: 'soon please', lapses_at: null })
  })
})
