/**
 * The runaway-agent breaker weighs the credits an agent kept, not what it reserved or had refunded
 * (lua/lib/breaker-window.lua): a metered call reserves the most it could cost and its settle
 * releases the rest from the minute's count; a refunded call gives its whole price back. So an
 * agent whose metered calls reserve past the breaker's credits a minute, but cost little, keeps
 * working, and so does one whose calls a failing provider refunds — while one that really spends
 * past the limit is still killed.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { LlmFake } from '../fakes/llm'
import type { TestApp } from '../helpers/harness'
import { GPT, openMeteredCall, reservation, startMeteredApp } from '../helpers/metering'
import { refund } from '../../src/paid-request/refund'

const LIMIT = 60
let t: TestApp
let llm: LlmFake

beforeAll(async () => {
  ;({ t, llm } = await startMeteredApp({ BREAKER_CREDITS_PER_MINUTE: String(LIMIT), BREAKER_IDENTICAL_PER_MINUTE: '0' }))
  // All of a test's calls in one minute: the window they count in is the one they give back to.
  t.clock.set(Math.ceil(t.clock.now() / 60_000) * 60_000)
})
afterAll(async () => {
  await t.close()
})

const ask = (token: string, i: number, maxTokens: number) => {
  const body = { model: 'gpt-test', max_tokens: maxTokens, messages: [{ role: 'user', content: `question ${i}` }] }
  return t.req('POST', '/proxy/openai/v1/chat/completions', { token, body })
}

async function agent() {
  const owner = await t.signup()
  const a = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'fleet-1' } })).body as { id: string; token: string }
  return { owner, a }
}

test('metered calls that reserve past the limit a minute but cost little do not trip it', async () => {
  const { a } = await agent()
  llm.usage = { input: 20, cached: 0, output: 30 }
  // The body's bytes bound the input (docs/metering.md): the reservation of one call.
  const reserved = reservation(GPT, JSON.stringify({ model: 'gpt-test', max_tokens: 16000, messages: [{ role: 'user', content: 'question 10' }] }).length, 16000)
  expect(reserved).toBeGreaterThan(LIMIT / 6)
  // Ten calls reserve well past the limit together; each costs a few credits at most.
  for (let i = 10; i < 20; i++) {
    const r = await ask(a.token, i, 16000)
    expect(r.status).toBe(200)
  }
})

test('calls a failing provider refunds give their credits back to the breaker too', async () => {
  const { a } = await agent()
  t.fake.handler = () => new Response('{"error":{"message":"overloaded"}}', { status: 503, headers: { 'content-type': 'application/json' } })
  try {
    for (let i = 0; i < 10; i++) {
      const r = await ask(a.token, i, 16000)
      expect(r.status).toBe(502)
      expect(r.body.error).toBe('PROVIDER_ERROR')
    }
  } finally {
    t.fake.handler = llm.handler
  }
  llm.usage = { input: 20, cached: 0, output: 30 }
  expect((await ask(a.token, 99, 16000)).status).toBe(200)
})

test('an agent that keeps what it spends is still stopped past the limit', async () => {
  const { a } = await agent()
  // Each call uses its whole ceiling: charged its reservation, nothing released.
  llm.usage = { input: 20, cached: 0, output: 16000 }
  const statuses: number[] = []
  for (let i = 0; i < 10; i++) statuses.push((await ask(a.token, i, 16000)).status)
  expect(statuses.slice(0, 3)).toEqual([200, 200, 200])
  const refused = statuses.indexOf(403)
  expect(refused).toBeGreaterThan(0)
  const r = await ask(a.token, 42, 16000)
  expect(r.body).toMatchObject({ error: 'AGENT_KILLED', reason: 'breaker' })
})

test('a give-back comes off the window of the minute the call record says, never another', async () => {
  const { a } = await agent()
  const principal = (await t.s.guard.tokens.resolve(a.token))!
  const call = await openMeteredCall(t.s, principal, { input: 150, cachedInput: 75, output: 600 }, { ceiling: 16000 })
  const { keys, redis } = t.s.ctx
  const minute = Math.floor(t.clock.now() / 60_000)
  const own = keys.breakerWindow(principal.accountId, a.id, minute)
  const next = keys.breakerWindow(principal.accountId, a.id, minute + 1)
  expect(Number(await redis.hget(own, 'credits'))).toBe(call.price)
  await redis.hset(next, 'credits', '7')
  await redis.pexpire(next, 120_000)
  // A caller that lays out the next minute's window: the script sees the record's minute and leaves it.
  const r = await refund(t.s.ctx, { accountId: principal.accountId, agentId: a.id, callId: call.callId, day: 0, reason: 'test', at: t.clock.now() + 60_000 })
  expect(r.applied).toBe(true)
  expect(await redis.hget(next, 'credits')).toBe('7')
  expect(Number(await redis.hget(own, 'credits'))).toBe(call.price)
})
