/**
 * Proposals in the operator chat, against the loopback fake of the Bot API: a new proposal arrives
 * in the linked chat with its reason and Approve / Decline buttons; /approve <id> applies it, a tap
 * on a button decides like the command; another account's proposal cannot be decided from here.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startFakeTelegram, tapUpdate, textUpdate, type FakeTelegram } from '../fakes/telegram'
import { deliverAll, telegramEnv, telegramPost } from '../helpers/events'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
let tg: FakeTelegram
beforeAll(async () => {
  tg = startFakeTelegram()
  t = await startTestApp({ env: telegramEnv(tg) })
})
afterAll(async () => {
  await t.close()
  tg.stop()
})

const CHAT = 7001
const USER = 91

async function say(text: string, chat = CHAT, user = USER): Promise<string> {
  const before = tg.to(chat).length
  expect((await telegramPost(t, textUpdate(chat, user, text))).status).toBe(200)
  const replies = tg.to(chat).slice(before)
  expect(replies).toHaveLength(1)
  return replies[0]!
}

const call = (token: string) => t.req('POST', '/v1/call/test.echo', { token, body: { q: `q${Math.random()}` } })

describe('proposals in the operator chat', () => {
  test('a proposal arrives with its reason and buttons; /approve applies it; a tap declines another', async () => {
    const o = await t.signup()
    const a = (await t.req('POST', '/v1/agents', { token: o.token, body: { name: 'crawler', daily_cap: 5 } })).body
    const link = await t.req('POST', '/v1/operator/link', { token: o.token })
    await say(link.body.command)

    expect((await call(a.token)).status).toBe(200)
    expect((await call(a.token)).body.rule).toBe('agent_daily_cap')
    const p = (await t.req('POST', '/v1/proposals', { token: a.token, body: { kind: 'raise_daily_cap', value: 50, reason: 'three more pages' } })).body
    await deliverAll(t)
    const msg = tg.sent.filter((m) => m.chatId === String(CHAT)).at(-1)!
    expect(msg.text).toContain(`Agent ${a.id} proposes a daily cap of 50 credits for agent ${a.id}: "three more pages"`)
    expect(msg.text).toContain(`/approve ${p.id}`)
    expect(msg.buttons).toEqual([[{ text: 'Approve', callback_data: `/approve ${p.id}` }, { text: 'Decline', callback_data: `/decline ${p.id}` }]])

    expect(await say('/proposals')).toContain(p.id)
    expect(await say(`/approve ${p.id} enjoy`)).toBe(`Proposal ${p.id} is approved.`)
    expect((await call(a.token)).status).toBe(200)
    const seen = (await t.req('GET', p.status_url.replace('http://pab.test', ''), { token: a.token })).body
    expect(seen).toMatchObject({ status: 'approved', decided_via: 'chat', note: 'enjoy' })
    expect(await say(`/approve ${p.id}`)).toContain('already approved')
    await deliverAll(t)
    expect(tg.to(CHAT).at(-1)).toBe(`Proposal ${p.id} (a daily cap of 50 credits for agent ${a.id}) is approved (chat): enjoy.`)

    // The Decline button: a callback_query runs /decline from the same chat and user.
    const q = (await t.req('POST', '/v1/proposals', { token: a.token, body: { kind: 'allow', value: 'test.pricey', reason: 'the pricey one' } })).body
    const before = tg.to(CHAT).length
    expect((await telegramPost(t, tapUpdate(CHAT, USER, `/decline ${q.id}`))).status).toBe(200)
    expect(tg.to(CHAT).slice(before)).toEqual([`Proposal ${q.id} is declined.`])
    expect(tg.answered.at(-1)!.text).toBe(`Proposal ${q.id} is declined.`)
    expect((await t.req('GET', `/v1/proposals/${q.id}`, { token: o.token })).body.status).toBe('declined')
    expect((await t.req('GET', '/v1/policies', { token: o.token })).body.agents[a.id].allowlist).toBeNull()
  })

  test("another account's proposal cannot be decided from this chat, nor by another user of it", async () => {
    const o = await t.signup()
    const link = await t.req('POST', '/v1/operator/link', { token: o.token })
    await say(link.body.command, 7002, 5)
    const other = await t.signup()
    const theirs = (await t.req('POST', '/v1/agents', { token: other.token, body: { name: 'theirs', daily_cap: 5 } })).body
    const p = (await t.req('POST', '/v1/proposals', { token: theirs.token, body: { kind: 'raise_daily_cap', value: 99, reason: 'please' } })).body
    expect(await say(`/approve ${p.id}`, 7002, 5)).toContain('No such proposal')
    expect(await say(`/decline ${p.id}`, 7002, 5)).toContain('No such proposal')
    expect((await telegramPost(t, tapUpdate(7002, 5, `/approve ${p.id}`))).status).toBe(200)
    // A member of the chat who did not link it cannot act for the account.
    const mine = (await t.req('POST', '/v1/proposals', { token: o.token, body: { kind: 'raise_daily_cap', value: 99, reason: 'mine' } })).body
    expect(await say(`/approve ${mine.id}`, 7002, 6)).toContain('not linked')
    expect((await t.req('GET', `/v1/proposals/${p.id}`, { token: other.token })).body.status).toBe('pending')
    expect((await t.req('GET', `/v1/proposals/${mine.id}`, { token: o.token })).body.status).toBe('pending')
    expect((await t.req('GET', '/v1/policies', { token: other.token })).body.agents[theirs.id].daily_cap).toBe(5)
    // And its events never come here.
    await deliverAll(t)
    expect(tg.to(7002).some((m) => m.includes(p.id) && m.includes('proposes'))).toBe(false)
  })

  test('a note the REST body refuses is refused in the chat too (over 280 characters, a bidi override): nothing decided', async () => {
    const o = await t.signup()
    const a = (await t.req('POST', '/v1/agents', { token: o.token, body: { name: 'noted', daily_cap: 5 } })).body
    await say((await t.req('POST', '/v1/operator/link', { token: o.token })).body.command, 7003, 8)
    const p = (await t.req('POST', '/v1/proposals', { token: a.token, body: { kind: 'raise_daily_cap', value: 50, reason: 'more' } })).body
    for (const note of ['n'.repeat(281), 'fine\u202eenif']) {
      const rest = await t.req('POST', `/v1/proposals/${p.id}/approve`, { token: o.token, body: { note } })
      expect(rest.body).toMatchObject({ error: 'BAD_REQUEST', field: 'note' })
      for (const cmd of ['approve', 'decline']) expect(await say(`/${cmd} ${p.id} ${note}`, 7003, 8)).toContain('note')
    }
    expect((await t.req('GET', `/v1/proposals/${p.id}`, { token: o.token })).body).toMatchObject({ status: 'pending', note: null })
    expect((await t.req('GET', '/v1/policies', { token: o.token })).body.agents[a.id].daily_cap).toBe(5)
    expect(await say(`/approve ${p.id} ${'n'.repeat(280)}`, 7003, 8)).toBe(`Proposal ${p.id} is approved.`)
  })
})
