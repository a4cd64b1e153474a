/**
 * Removing the webhook endpoint cancels what was pending for it at once (docs/events.md): the
 * deliveries list says so, and an endpoint set again later does not receive the old events.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startReceiver, type Receiver } from '../fakes/webhook-receiver'
import { deliverAll, subscribe } from '../helpers/events'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
let hooks: Receiver
beforeAll(async () => {
  hooks = startReceiver()
  t = await startTestApp({ env: { WEBHOOKS_ALLOW_INSECURE_LOOPBACK: '1' } })
})
afterAll(async () => {
  await t.close()
  hooks.stop()
})

const deliveries = async (token: string) => (await t.req('GET', '/v1/webhooks/deliveries', { token })).body.deliveries as Record<string, any>[]

describe('webhook endpoint management', () => {
  test('DELETE cancels pending deliveries at once; an endpoint set again does not receive them', async () => {
    const owner = await t.signup()
    await subscribe(t, owner.token, hooks)
    hooks.down = true
    const agent = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'a' } })).body
    await t.req('POST', `/v1/agents/${agent.id}/kill`, { token: owner.token })
    await deliverAll(t)
    const [d] = await deliveries(owner.token)
    expect(d).toMatchObject({ status: 'pending', last_error: 'HTTP 503' })
    expect((await t.req('DELETE', '/v1/webhooks', { token: owner.token })).status).toBe(204)
    expect((await deliveries(owner.token))[0]).toMatchObject({ event_id: d!.event_id, status: 'cancelled', next_retry_at: null })
    hooks.down = false
    await subscribe(t, owner.token, hooks)
    const before = hooks.requests.length
    t.clock.advance(60_000)
    await deliverAll(t)
    expect(hooks.requests.slice(before).map((r) => r.id)).not.toContain(d!.event_id)
    expect((await deliveries(owner.token))[0]).toMatchObject({ event_id: d!.event_id, status: 'cancelled' })
  })
})
