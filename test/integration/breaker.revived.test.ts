/**
 * A breaker trip deletes the agent's windows: "a revived agent starts from an empty window, not from
 * the burst that tripped it" (debit.lua). A call debited before the trip and given back after the
 * revival (a refund, a settle's release) must not come off the revived agent's fresh window, which
 * never counted it (lua/lib/breaker-window.lua): else the revived agent spends past its limit.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { openMeteredCall } from '../helpers/metering'

const LIMIT = 60
let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { BREAKER_CREDITS_PER_MINUTE: String(LIMIT), BREAKER_IDENTICAL_PER_MINUTE: '0' } })
  // Every call of the test in one minute.
  t.clock.set(Math.ceil(t.clock.now() / 60_000) * 60_000 + 1000)
})
afterAll(async () => {
  await t?.close()
})

test('a pre-trip call refunded after the revival does not come off the revived window', async () => {
  const owner = await t.signup()
  const a = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'runaway' } })).body as { id: string; token: string }
  const principal = (await t.s.guard.tokens.resolve(a.token))!
  const open = () => openMeteredCall(t.s, principal, { input: 1000, cachedInput: 500, output: 2000 }, { inputBound: 1000, ceiling: 10_000 })
  const x = await open() // in flight across the trip and the revival
  const price = x.price
  expect(price * 2).toBeLessThanOrEqual(LIMIT)
  expect(price * 3).toBeGreaterThan(LIMIT)
  await open()
  await expect(open()).rejects.toMatchObject({ code: 'AGENT_KILLED' })
  expect((await t.req('POST', `/v1/agents/${a.id}/revive`, { token: owner.token })).status).toBe(200)

  // The revived agent spends from an empty window: two calls fit, a third is past the limit.
  await open()
  await open()
  // The pre-trip call's provider fails: its refund gives its price back — not to this window.
  await x.settle('provider_error')
  await expect(open()).rejects.toMatchObject({ code: 'AGENT_KILLED' })
})

test('a call debited while the breaker was off does not come off the window it never counted in', async () => {
  const owner = await t.signup()
  const a = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'unwatched' } })).body as { id: string; token: string }
  const policy = (breaker: { credits_per_minute: number; identical_per_minute: number }) =>
    t.req('PUT', '/v1/policies', { token: owner.token, body: { agents: { [a.id]: { breaker } } } })
  expect((await policy({ credits_per_minute: 0, identical_per_minute: 0 })).status).toBe(200)
  const principal = (await t.s.guard.tokens.resolve(a.token))!
  const open = () => openMeteredCall(t.s, principal, { input: 1000, cachedInput: 500, output: 2000 }, { inputBound: 1000, ceiling: 10_000 })
  const x = await open() // counted in no window: the breaker is off
  // The owner turns the breaker on while x is still running.
  expect((await policy({ credits_per_minute: LIMIT, identical_per_minute: 0 })).status).toBe(200)
  await open()
  await open()
  await x.settle('provider_error')
  await expect(open()).rejects.toMatchObject({ code: 'AGENT_KILLED' })
})
