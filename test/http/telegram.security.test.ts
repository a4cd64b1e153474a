/**
 * Who may speak for an account in the operator channel: only Telegram (the webhook secret header,
 * checked before anything else), only a chat linked with a live one-time code, only the user who
 * linked it; a redelivered update acts once; the link code comes only to the owner token.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { startFakeTelegram, textUpdate, type FakeTelegram } from '../fakes/telegram'
import { TG_SECRET, telegramEnv, telegramPost } from '../helpers/events'
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

async function linkedOwner(chat: number, user: number) {
  const owner = await t.signup()
  const agent = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'target' } })).body as { id: string; token: string }
  const code = (await t.req('POST', '/v1/operator/link', { token: owner.token })).body.code as string
  await telegramPost(t, textUpdate(chat, user, `/link ${code}`))
  return { owner, agent }
}

const stateOf = async (owner: { token: string }, id: string) =>
  ((await t.req('GET', '/v1/agents', { token: owner.token })).body.agents as { id: string; state: string }[]).find((a) => a.id === id)!.state


/** Runs `fn` while the chat links' table is renamed away (Postgres refuses every chat read and write). */
async function whileChatsAway<T>(fn: () => Promise<T>): Promise<T> {
  const sql = postgres(t.db.url, { max: 1, onnotice: () => {} })
  await sql`ALTER TABLE operator_chats RENAME TO operator_chats_away`
  try {
    return await fn()
  } finally {
    await sql`ALTER TABLE operator_chats_away RENAME TO operator_chats`
    await sql.end()
  }
}
describe('operator channel security', () => {
  test('a wrong or missing secret → UNAUTHORIZED before the update is read; nothing runs, nothing is sent', async () => {
    const { owner, agent } = await linkedOwner(8001, 5)
    const sent = tg.sent.length
    for (const secret of ['wrong-secret-0123456789', '', TG_SECRET + 'x']) {
      const r = await t.req('POST', '/ops/telegram', { body: textUpdate(8001, 5, '/kill target'), headers: secret ? { 'x-telegram-bot-api-secret-token': secret } : {} })
      expect([secret, r.status, r.body.error]).toEqual([secret, 401, 'UNAUTHORIZED'])
    }
    // Without the secret, even a malformed body is UNAUTHORIZED (no hint of the expected shape).
    expect((await t.req('POST', '/ops/telegram', { body: { nonsense: true } })).status).toBe(401)
    expect(tg.sent.length).toBe(sent)
    expect(await stateOf(owner, agent.id)).toBe('active')
  })

  test('an expired link code links nothing', async () => {
    const owner = await t.signup()
    const code = (await t.req('POST', '/v1/operator/link', { token: owner.token })).body.code
    t.clock.advance(601_000)
    await telegramPost(t, textUpdate(8101, 6, `/link ${code}`))
    expect(tg.to(8101).at(-1)).toContain('unknown, expired or already used')
    await telegramPost(t, textUpdate(8101, 6, '/status'))
    expect(tg.to(8101).at(-1)).toContain('not linked')
  })

  test('a code used once cannot link a second chat, and a guessed code links nothing', async () => {
    const owner = await t.signup()
    const code = (await t.req('POST', '/v1/operator/link', { token: owner.token })).body.code
    await telegramPost(t, textUpdate(8201, 7, `/link ${code}`))
    expect(tg.to(8201).at(-1)).toContain('Linked')
    await telegramPost(t, textUpdate(8202, 8, `/link ${code}`))
    expect(tg.to(8202).at(-1)).toContain('already used')
    await telegramPost(t, textUpdate(8203, 9, `/link ${'A'.repeat(22)}`))
    expect(tg.to(8203).at(-1)).toContain('unknown')
  })

  test('Telegram redelivering one update runs it once', async () => {
    const { owner, agent } = await linkedOwner(8301, 10)
    const update = textUpdate(8301, 10, '/kill target')
    const replies = tg.to(8301).length
    expect((await telegramPost(t, update)).status).toBe(200)
    expect((await telegramPost(t, update)).status).toBe(200)
    expect(tg.to(8301).length).toBe(replies + 1)
    expect(await stateOf(owner, agent.id)).toBe('killed')
  })

  test('an update that failed (a 500) runs when Telegram redelivers it', async () => {
    const { owner, agent } = await linkedOwner(8311, 15)
    const update = textUpdate(8311, 15, '/kill target')
    const replies = tg.to(8311).length
    expect(await whileChatsAway(() => telegramPost(t, update).then((r) => r.status))).toBe(500)
    expect((await telegramPost(t, update)).status).toBe(200)
    expect(tg.to(8311).slice(replies)).toEqual([expect.stringContaining('is killed')])
    expect(await stateOf(owner, agent.id)).toBe('killed')
  })

  test('only the owner token gets a link code; an agent token → FORBIDDEN, none → UNAUTHORIZED', async () => {
    const { agent } = await linkedOwner(8401, 11)
    expect((await t.req('POST', '/v1/operator/link', { token: agent.token })).body.error).toBe('FORBIDDEN')
    expect((await t.req('POST', '/v1/operator/link')).status).toBe(401)
  })

  test('a chat linked to one account cannot act on another account’s agent even by its exact id', async () => {
    const mine = await linkedOwner(8501, 12)
    const other = await linkedOwner(8502, 13)
    await telegramPost(t, textUpdate(8501, 12, `/kill ${other.agent.id}`))
    expect(tg.to(8501).at(-1)).toContain('No agent')
    expect(await stateOf(other.owner, other.agent.id)).toBe('active')
    expect(await stateOf(mine.owner, mine.agent.id)).toBe('active')
  })
  test('a rotated owner token ends the chat links it made: the chat no longer commands, and its unused code links nothing', async () => {
    const { owner, agent } = await linkedOwner(8601, 16)
    // The stolen token's holder asks for a second code before the owner rotates.
    const code = (await t.req('POST', '/v1/operator/link', { token: owner.token })).body.code as string
    const rotated = await t.req('POST', '/v1/token/rotate', { token: owner.token })
    expect(rotated.status).toBe(200)
    await telegramPost(t, textUpdate(8601, 16, '/kill target'))
    expect(tg.to(8601).at(-1)).toContain('not linked')
    await telegramPost(t, textUpdate(8602, 17, `/link ${code}`))
    expect(tg.to(8602).at(-1)).toContain('unknown, expired or already used')
    await telegramPost(t, textUpdate(8602, 17, '/kill target'))
    expect(tg.to(8602).at(-1)).toContain('not linked')
    expect(await stateOf({ token: rotated.body.token }, agent.id)).toBe('active')
    // The new token links afresh.
    const fresh = (await t.req('POST', '/v1/operator/link', { token: rotated.body.token })).body.code as string
    await telegramPost(t, textUpdate(8601, 16, `/link ${fresh}`))
    expect(tg.to(8601).at(-1)).toContain('Linked')
  })

  test('a message sent as a channel or an anonymous group admin links nothing and commands nothing', async () => {
    // Telegram gives every such message the same \`from\` (GroupAnonymousBot, Channel_Bot): who sent it is unknown.
    const ANON = 1087968824
    const asGroup = (text: string) => {
      const u = textUpdate(-8701, ANON, text) as { message: Record<string, unknown> }
      u.message.sender_chat = { id: -8701, type: 'supergroup', title: 'ops' }
      return u
    }
    const owner = await t.signup()
    const agent = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'target' } })).body as { id: string }
    const code = (await t.req('POST', '/v1/operator/link', { token: owner.token })).body.code as string
    await telegramPost(t, asGroup(`/link ${code}`))
    expect(tg.to(-8701).at(-1)).toContain('as yourself')
    await telegramPost(t, asGroup('/kill target'))
    expect(tg.to(-8701).at(-1)).toContain('as yourself')
    expect(await stateOf(owner, agent.id)).toBe('active')
    // The code was not spent on it: the owner, as themself, links with it.
    await telegramPost(t, textUpdate(-8701, 18, `/link ${code}`))
    expect(tg.to(-8701).at(-1)).toContain('Linked')
  })
  test('a /link whose write failed (a 500) links when Telegram redelivers it: its code is not spent', async () => {
    const owner = await t.signup()
    const code = (await t.req('POST', '/v1/operator/link', { token: owner.token })).body.code as string
    const update = textUpdate(8801, 19, `/link ${code}`)
    expect(await whileChatsAway(() => telegramPost(t, update).then((r) => r.status))).toBe(500)
    expect((await telegramPost(t, update)).status).toBe(200)
    expect(tg.to(8801).at(-1)).toContain('Linked')
  })
})
