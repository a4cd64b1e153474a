/**
 * The operator channel end to end against a loopback fake of the Telegram Bot API: the owner links
 * a chat with a one-time code (never a token), then /status, /agents, /kill, /revive and /cap act
 * on that account through the governance services; the account's events arrive in the chat; an
 * agent of another account cannot be touched, and another user of the chat cannot act.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startFakeTelegram, textUpdate, type FakeTelegram } from '../fakes/telegram'
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

const CHAT = 5001
const OWNER_USER = 77

/** Sends a message as `user` in `chat` and returns the bot's reply. */
async function say(text: string, chat = CHAT, user = OWNER_USER): Promise<string> {
  const before = tg.to(chat).length
  const r = await telegramPost(t, textUpdate(chat, user, text))
  expect(r.status).toBe(200)
  const replies = tg.to(chat).slice(before)
  expect(replies).toHaveLength(1)
  return replies[0]!
}

const call = (token: string, q = 'x') => t.req('POST', '/v1/call/test.echo', { token, body: { q } })

describe('the Telegram operator channel', () => {
  test('link, status, agents, kill, revive, cap — and the events arrive in the chat', async () => {
    const owner = await t.signup()
    const mk = async (o: { token: string }, name: string) => (await t.req('POST', '/v1/agents', { token: o.token, body: { name } })).body as { id: string; token: string }
    const scraper = await mk(owner, 'scraper')
    const writer = await mk(owner, 'writer')
    const stranger = await t.signup()
    const theirs = await mk(stranger, 'theirs')

    // Not linked yet: nothing acts.
    expect(await say('/status')).toContain('not linked')

    const link = await t.req('POST', '/v1/operator/link', { token: owner.token })
    expect(link.status).toBe(201)
    expect(link.body.code).toMatch(/^[A-Za-z0-9_-]{22}$/)
    expect(link.body.command).toBe(`/link ${link.body.code}`)
    expect(link.body.code).not.toContain(owner.token)
    expect(await say(link.body.command)).toContain(`Linked to account ${owner.account_id}`)
    // The code was single use.
    expect(await say(`/link ${link.body.code}`, 9999, 1)).toContain('unknown, expired or already used')

    const status = await say('/status')
    expect(status).toContain('Balance: 500 credits')
    expect(status).toContain('Agents: 2 active, 0 killed')
    const agents = await say('/agents')
    expect(agents).toContain(`scraper — ${scraper.id} — active`)
    expect(agents).toContain(`writer — ${writer.id} — active`)
    expect(agents).not.toContain(theirs.id)
    // Sub-agents (docs/api.md §8) show as a tree, indented under their parent.
    const helper = (await t.req('POST', '/v1/agents', { token: writer.token, body: { name: 'helper', budget: 10 } })).body as { id: string }
    expect(await say('/agents')).toContain(`${writer.id} — active, spent today 0\n    ✅ helper — ${helper.id} — active, spent today 0, lifetime 0/10`)
    await deliverAll(t)
    expect(tg.to(CHAT)).toContain(`Agent "helper" (${helper.id}) was created by agent ${writer.id} (depth 2, budget 10).`)

    // /kill by name: the agent answers AGENT_KILLED at once, and the owner's event comes to the chat.
    expect(await say('/kill scraper')).toBe(`Agent "scraper" (${scraper.id}) is killed.`)
    expect((await call(scraper.token)).body).toMatchObject({ error: 'AGENT_KILLED', reason: 'operator' })
    expect((await call(writer.token)).status).toBe(200)
    await deliverAll(t)
    expect(tg.to(CHAT).at(-1)).toBe(`Agent "scraper" (${scraper.id}) was killed by the operator (chat). Revive it with /revive ${scraper.id}`)

    // /revive by id (the spec's command).
    expect(await say(`/revive ${scraper.id}`)).toBe(`Agent "scraper" (${scraper.id}) is active.`)
    expect((await call(scraper.token)).status).toBe(200)
    await deliverAll(t)
    expect(tg.to(CHAT).at(-1)).toContain('was revived')

    // /cap: the writer may spend 10 credits a day; the third 5-credit call is refused, the chat told once.
    expect(await say('/cap writer 10')).toContain('may spend 10 credits per day')
    expect((await t.req('GET', '/v1/policies', { token: owner.token })).body.agents[writer.id].daily_cap).toBe(10)
    expect((await call(writer.token, 'second')).status).toBe(200) // 5 spent before, now 10
    expect((await call(writer.token, 'third')).body).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_daily_cap' })
    expect((await call(writer.token, 'fourth')).body.rule).toBe('agent_daily_cap')
    await deliverAll(t)
    const capMsgs = tg.to(CHAT).filter((m) => m.includes('reached its daily cap'))
    expect(capMsgs).toHaveLength(1)
    expect(capMsgs[0]).toContain(`/cap ${writer.id} <credits>`)
    expect(await say('/cap writer off')).toContain('no daily cap of its own')
    expect((await call(writer.token, 'fifth')).status).toBe(200)

    // Another account's agent is untouchable from this chat, by id or by name.
    expect(await say(`/kill ${theirs.id}`)).toBe(`No agent "${theirs.id}" on this account (see /agents).`)
    expect(await say('/kill theirs')).toContain('No agent')
    expect(await say(`/cap ${theirs.id} 0`)).toContain('No agent')
    expect((await call(theirs.token)).status).toBe(200)
    // And its events never come here.
    const seen = tg.to(CHAT).length
    await t.req('POST', `/v1/agents/${theirs.id}/kill`, { token: stranger.token })
    await deliverAll(t)
    expect(tg.to(CHAT).slice(seen)).toEqual([])

    // Another member of the chat has not linked: they cannot act for the account.
    expect(await say('/kill writer', CHAT, 78)).toContain('not linked')
    expect((await call(writer.token, 'sixth')).status).toBe(200)

    // Bad input gets help, not an error.
    expect(await say('/kill')).toContain('Usage: /kill')
    expect(await say('/cap writer lots')).toContain('whole number')
    expect(await say('/frobnicate')).toContain('Unknown command')
    expect(await say(`/revive ${scraper.id}`)).toContain('is active') // already active: a no-op

    expect(await say('/unlink')).toContain('Unlinked')
    expect(await say('/status')).toContain('not linked')
  })

  test("an update's other fields are Telegram's: a reply to the bot's multi-line message runs, an edited one is acknowledged", async () => {
    const owner = await t.signup()
    const link = await t.req('POST', '/v1/operator/link', { token: owner.token })
    const help = await say(link.body.command, 6101, 2)
    expect(help).toContain('\n')
    // Swiping to reply to the bot's own message: Telegram quotes it, newlines and all.
    const reply = textUpdate(6101, 2, '/status') as ReturnType<typeof textUpdate> & { message: Record<string, unknown> }
    reply.message.reply_to_message = { message_id: 1, date: 1, chat: { id: 6101, type: 'private' }, from: { id: 1, is_bot: true, first_name: 'Bot' }, text: help }
    const before = tg.to(6101).length
    const r = await telegramPost(t, reply)
    expect([r.status, r.text]).toEqual([200, '{"ok":true}'])
    expect(tg.to(6101).slice(before)).toEqual([expect.stringContaining('Balance: 500 credits')])
    // An edit of a multi-line message: nothing to run, but a 2xx (Telegram redelivers anything else).
    const edited = { update_id: reply.update_id + 100_000, edited_message: { message_id: 9, date: 1, edit_date: 2, chat: { id: 6101, type: 'private' }, from: { id: 2, is_bot: false, first_name: 'Op' }, text: 'line one\nline two' } }
    expect((await telegramPost(t, edited)).status).toBe(200)
    expect(tg.to(6101).length).toBe(before + 1)
  })

  test('a revoked agent cannot be revived from the chat either', async () => {
    const owner = await t.signup()
    const a = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'gone' } })).body
    await t.req('DELETE', `/v1/agents/${a.id}`, { token: owner.token })
    const link = await t.req('POST', '/v1/operator/link', { token: owner.token })
    await say(link.body.command, 6001, 1)
    expect(await say(`/revive ${a.id}`, 6001, 1)).toContain('revoked')
  })
})
