/**
 * The runaway-agent breaker (debit.lua): an agent whose identical requests or credits over the
 * sliding minute pass its `breaker` policy is killed in place of the debit — AGENT_KILLED with
 * reason "breaker" — while the account's other agents keep working; the owner hears it on every
 * channel (webhook and chat), and only the operator can revive it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startFakeTelegram, textUpdate, type FakeTelegram } from '../fakes/telegram'
import { startReceiver, type Receiver } from '../fakes/webhook-receiver'
import { deliverAll, subscribe, telegramEnv, telegramPost } from '../helpers/events'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
let tg: FakeTelegram
let hooks: Receiver
beforeAll(async () => {
  tg = startFakeTelegram()
  hooks = startReceiver()
  t = await startTestApp({
    env: { BREAKER_CREDITS_PER_MINUTE: '1000', BREAKER_IDENTICAL_PER_MINUTE: '5', WEBHOOKS_ALLOW_INSECURE_LOOPBACK: '1', ...telegramEnv(tg) },
  })
  // Whole minutes make the sliding window's arithmetic easy to follow: the previous minute weighs 1.
  t.clock.set(Math.ceil(t.clock.now() / 60_000) * 60_000)
})
afterAll(async () => {
  await t.close()
  tg.stop()
  hooks.stop()
})

async function fleet(...names: string[]) {
  const owner = await t.signup()
  const agents = []
  for (const name of names) agents.push((await t.req('POST', '/v1/agents', { token: owner.token, body: { name } })).body as { id: string; token: string })
  return { owner, agents }
}

const call = (token: string, q: string, slug = 'test.echo') => t.req('POST', `/v1/call/${slug}`, { token, body: { q } })

describe('runaway-agent breaker', () => {
  test('a burst of identical requests kills the agent after the policy allows 5; its sibling keeps working', async () => {
    const { owner, agents: [runaway, steady] } = await fleet('runaway', 'steady')
    await subscribe(t, owner.token, hooks)
    const chat = 7001
    const link = await t.req('POST', '/v1/operator/link', { token: owner.token })
    await telegramPost(t, textUpdate(chat, 42, `/link ${link.body.code}`))

    const burst = await Promise.all([
      ...Array.from({ length: 12 }, () => call(runaway!.token, 'same question')),
      ...Array.from({ length: 6 }, (_, i) => call(steady!.token, `question ${i}`)),
    ])
    const loop = burst.slice(0, 12)
    expect(loop.filter((r) => r.status === 200)).toHaveLength(5)
    const refused = loop.filter((r) => r.status !== 200)
    expect(refused).toHaveLength(7)
    for (const r of refused) expect(r.body).toMatchObject({ error: 'AGENT_KILLED', agent_id: runaway!.id, reason: 'breaker' })
    expect(burst.slice(12).map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200])

    // The trip took no money: 5 loop calls and 6 steady calls at 5 credits.
    expect((await t.req('GET', '/v1/balance', { token: owner.token })).body.balance).toBe(500 - 11 * 5)
    // Killed everywhere, not only on paid calls; the sibling is untouched.
    expect((await t.req('GET', '/v1/balance', { token: runaway!.token })).body).toMatchObject({ error: 'AGENT_KILLED', reason: 'breaker' })
    expect((await call(steady!.token, 'one more')).status).toBe(200)
    const listed = (await t.req('GET', '/v1/agents', { token: owner.token })).body.agents as { id: string; state: string; kill_reason: string | null }[]
    expect(listed.find((a) => a.id === runaway!.id)).toMatchObject({ state: 'killed', kill_reason: 'breaker' })
    expect(listed.find((a) => a.id === steady!.id)).toMatchObject({ state: 'active', kill_reason: null })

    // The owner hears it on every channel: the webhook (signed) and the linked chat.
    await deliverAll(t)
    const killed = hooks.ofType('agent.killed').filter((e) => e.data.agent_id === runaway!.id)
    expect(killed).toHaveLength(1)
    expect(killed[0]!.data).toMatchObject({ reason: 'breaker', rule: 'identical_per_minute', limit: 5, observed: 6, name: 'runaway', target: 'test.echo' })
    expect(tg.to(chat).some((m) => m.includes('Runaway-agent breaker') && m.includes(runaway!.id) && m.includes(`/revive ${runaway!.id}`))).toBe(true)

    // Only the operator can revive it: the agent itself (or its sibling) is refused.
    expect((await t.req('POST', `/v1/agents/${runaway!.id}/revive`, { token: steady!.token })).body.error).toBe('FORBIDDEN')
    expect((await t.req('POST', `/v1/agents/${runaway!.id}/revive`, { token: runaway!.token })).body.error).toBe('AGENT_KILLED')
    const revived = await t.req('POST', `/v1/agents/${runaway!.id}/revive`, { token: owner.token })
    expect(revived.body).toMatchObject({ state: 'active', kill_reason: null })
    // The window that tripped it was cleared: the revived agent gets a fresh minute.
    expect((await call(runaway!.token, 'same question')).status).toBe(200)
    await deliverAll(t)
    expect(hooks.ofType('agent.revived').filter((e) => e.data.agent_id === runaway!.id)[0]!.data).toMatchObject({ via: 'api', was_killed_by: 'breaker' })
  })

  test('the credits rule: a per-agent policy of 12 credits per minute kills on the third 5-credit call', async () => {
    const { owner, agents: [spender, other] } = await fleet('spender', 'other')
    const put = await t.req('PUT', '/v1/policies', { token: owner.token, body: { agents: { [spender!.id]: { breaker: { credits_per_minute: 12, identical_per_minute: 0 } } } } })
    expect(put.status).toBe(200)
    expect(put.body.agents[spender!.id].breaker).toEqual({ credits_per_minute: 12, identical_per_minute: 0 })
    // The sibling keeps the deployment defaults.
    expect(put.body.agents[other!.id].breaker).toEqual({ credits_per_minute: 1000, identical_per_minute: 5 })

    expect((await call(spender!.token, 'a')).status).toBe(200)
    expect((await call(spender!.token, 'b')).status).toBe(200)
    const third = await call(spender!.token, 'c')
    expect(third.status).toBe(403)
    expect(third.body).toMatchObject({ error: 'AGENT_KILLED', reason: 'breaker' })
    expect((await call(other!.token, 'c')).status).toBe(200)
    await deliverAll(t)
    const ev = hooks.requests.find((r) => r.type === 'agent.killed' && r.data.agent_id === spender!.id)
    // No webhook for this owner: the event is still on record for GET /v1/events.
    expect(ev).toBeUndefined()
    const events = (await t.req('GET', '/v1/events', { token: owner.token })).body.events as { type: string; data: Record<string, unknown> }[]
    expect(events.find((e) => e.type === 'agent.killed')!.data).toMatchObject({ agent_id: spender!.id, reason: 'breaker', rule: 'credits_per_minute', limit: 12, observed: 15 })
  })

  test('it is a rate over a sliding minute, not a lifetime count: identical requests spread over minutes never trip', async () => {
    const { agents: [poller] } = await fleet('poller')
    for (let minute = 0; minute < 4; minute++) {
      for (let i = 0; i < 2; i++) expect((await call(poller!.token, 'poll')).status).toBe(200)
      t.clock.advance(60_000)
    }
    // 8 identical requests in all, at most 4 in any sliding minute (limit 5).
    expect((await t.req('GET', '/v1/balance', { token: poller!.token })).status).toBe(200)
  })

  test('the owner token is never subject to the breaker (there is no one above it to revive it)', async () => {
    const owner = await t.signup()
    const rs = await Promise.all(Array.from({ length: 10 }, () => call(owner.token, 'same')))
    expect(rs.map((r) => r.status)).toEqual(Array(10).fill(200))
  })

  test('0 turns a rule off: the identical-requests rule disabled lets a loop run until other limits answer', async () => {
    const { owner, agents: [looper] } = await fleet('looper')
    await t.req('PUT', '/v1/policies', { token: owner.token, body: { agents: { [looper!.id]: { breaker: { identical_per_minute: 0 } } } } })
    const rs = await Promise.all(Array.from({ length: 10 }, () => call(looper!.token, 'again')))
    expect(rs.map((r) => r.status)).toEqual(Array(10).fill(200))
    // null goes back to the default.
    const back = await t.req('PUT', '/v1/policies', { token: owner.token, body: { agents: { [looper!.id]: { breaker: { identical_per_minute: null } } } } })
    expect(back.body.agents[looper!.id].breaker.identical_per_minute).toBe(5)
  })
})
