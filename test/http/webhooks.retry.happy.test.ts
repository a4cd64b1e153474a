/**
 * A receiver that is down for hours still gets every event, once it is back: each failed delivery
 * is retried with exponential backoff (on the app clock — the test moves it instead of waiting)
 * under the same webhook-id, GET /v1/webhooks/deliveries shows the attempts, and a receiver down
 * for more than a day is given up on (status failed).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startReceiver, type Receiver } from '../fakes/webhook-receiver'
import { deliverAll, subscribe } from '../helpers/events'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
let hooks: Receiver
let gone: Receiver
beforeAll(async () => {
  hooks = startReceiver()
  gone = startReceiver()
  t = await startTestApp({ env: { WEBHOOKS_ALLOW_INSECURE_LOOPBACK: '1' } })
})
afterAll(async () => {
  await t.close()
  hooks.stop()
})

const MIN = 60_000
const HOUR = 60 * MIN

async function churn(owner: { token: string }, agentId: string, times: number) {
  for (let i = 0; i < times; i++) {
    await t.req('POST', `/v1/agents/${agentId}/kill`, { token: owner.token })
    await t.req('POST', `/v1/agents/${agentId}/revive`, { token: owner.token })
  }
}

const deliveries = async (token: string) => (await t.req('GET', '/v1/webhooks/deliveries', { token })).body.deliveries as Record<string, any>[]

describe('webhook retries', () => {
  test('down (503, then no listener at all) for hours, then up: every event arrives, under its first webhook-id', async () => {
    const owner = await t.signup()
    // Only the kill/revive churn below: the agent's own creation event would add one more.
    await subscribe(t, owner.token, hooks, ['agent.killed', 'agent.revived'])
    const agent = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'flappy' } })).body
    hooks.down = true
    await churn(owner, agent.id, 3) // 6 events
    await deliverAll(t)
    let log = await deliveries(owner.token)
    expect(log).toHaveLength(6)
    for (const d of log) {
      expect(d).toMatchObject({ status: 'pending', attempts: 1, last_response_code: 503, last_error: 'HTTP 503' })
      // First retry ~10 s later (±10 % jitter).
      const wait = Date.parse(d.next_retry_at) - t.clock.now()
      expect(wait).toBeGreaterThanOrEqual(9_000)
      expect(wait).toBeLessThanOrEqual(11_000)
    }
    const firstIds = new Set(hooks.requests.map((r) => r.id))
    expect(firstIds.size).toBe(6)

    // Nothing is due before the retry time: no request at all.
    await deliverAll(t)
    expect(hooks.requests).toHaveLength(6)

    // The receiver goes away entirely; more events happen meanwhile.
    hooks.stop()
    await churn(owner, agent.id, 1) // 2 more
    // Each round: jump to when every pending delivery is due, and let them fail again.
    const waits: number[] = []
    const tracked = log.at(-1)!.event_id // the oldest event
    for (let round = 0; round < 6; round++) {
      const pending = (await deliveries(owner.token)).filter((d) => d.status === 'pending')
      t.clock.set(Math.max(...pending.map((d) => Date.parse(d.next_retry_at))))
      await deliverAll(t)
      const d = (await deliveries(owner.token)).find((x) => x.event_id === tracked)!
      waits.push(Date.parse(d.next_retry_at) - Date.parse(d.last_attempt_at))
    }
    log = await deliveries(owner.token)
    expect(log).toHaveLength(8)
    expect(log.every((d) => d.status === 'pending' && d.attempts >= 2)).toBe(true)
    expect(log.some((d) => d.last_response_code === null && d.last_error)).toBe(true)
    // Exponential backoff: each wait about double the one before (±10 % jitter each).
    for (let i = 1; i < waits.length; i++) {
      expect(waits[i]! / waits[i - 1]!).toBeGreaterThan(1.6)
      expect(waits[i]! / waits[i - 1]!).toBeLessThan(2.5)
    }
    expect(log.find((d) => d.event_id === tracked)!.attempts).toBe(7) // the first attempt and 6 retries

    // Up again, hours later: every event arrives once it is due, then nothing is pending.
    hooks.restart()
    hooks.down = false
    t.clock.advance(5 * HOUR)
    await deliverAll(t)
    const got = hooks.unique()
    expect(got).toHaveLength(8)
    expect(got.every((e) => e.verified)).toBe(true)
    for (const id of firstIds) expect(got.some((e) => e.id === id)).toBe(true)
    // The same event was retried under the same webhook-id: receivers dedupe on it.
    expect(hooks.requests.filter((r) => firstIds.has(r.id)).length).toBeGreaterThan(6)
    log = await deliveries(owner.token)
    for (const d of log) expect(d).toMatchObject({ status: 'delivered', last_response_code: 204, next_retry_at: null })
  })

  test('a receiver down for more than a day is given up on: failed, with the attempt count', async () => {
    const owner = await t.signup()
    await subscribe(t, owner.token, gone)
    gone.stop()
    const agent = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'x' } })).body
    await t.req('POST', `/v1/agents/${agent.id}/kill`, { token: owner.token })
    await deliverAll(t)
    const start = t.clock.now()
    for (let i = 0; i < 200; i++) {
      const [d] = await deliveries(owner.token)
      if (d!.status !== 'pending') break
      t.clock.set(Date.parse(d!.next_retry_at))
      await deliverAll(t)
    }
    const [d] = await deliveries(owner.token)
    expect(d).toMatchObject({ status: 'failed', next_retry_at: null, last_response_code: null })
    // Exponential: about 17 attempts in 24 h (10 s doubling up to 4 h), not hundreds.
    expect(d!.attempts).toBeGreaterThan(10)
    expect(d!.attempts).toBeLessThan(25)
    // The last attempt was at the day mark.
    expect(Date.parse(d!.last_attempt_at) - start).toBe(24 * HOUR)
  })
})
