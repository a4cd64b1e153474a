/**
 * /v1/webhooks refusals: only https endpoints of public hosts (plain http://127.0.0.1 only behind
 * WEBHOOKS_ALLOW_INSECURE_LOOPBACK, which this file leaves off), known event kinds, no unknown
 * fields; NOT_FOUND without an endpoint; the secret shown only when generated, and rotation
 * invalidates the old one; another account's deliveries are never visible.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Webhook } from 'standardwebhooks'
import { webhookPayload } from '../../src/events/webhook-send'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

const put = (token: string, body: unknown) => t.req('PUT', '/v1/webhooks', { token, body })

describe('/v1/webhooks refusals', () => {
  test('URLs: not https, private or loopback hosts, credentials, garbage → BAD_REQUEST naming url', async () => {
    const owner = await t.signup()
    for (const url of [
      'http://example.com/hook',
      'http://127.0.0.1:9/hook', // loopback over http needs the test-only flag
      'https://127.0.0.1/hook',
      'https://10.1.2.3/hook',
      'https://192.168.0.10/hook',
      'https://169.254.169.254/latest/meta-data',
      'https://[::1]/hook',
      'https://localhost/hook',
      'https://user:pw@example.com/hook',
      'ftp://example.com/hook',
      'not a url',
    ]) {
      const r = await put(owner.token, { url })
      expect([url, r.status, r.body.error, r.body.field]).toEqual([url, 400, 'BAD_REQUEST', 'url'])
    }
    expect((await t.req('GET', '/v1/webhooks', { token: owner.token })).status).toBe(404)
  })

  test('unknown event kinds and unknown fields are refused', async () => {
    const owner = await t.signup()
    const bad = await put(owner.token, { url: 'https://example.com/h', events: ['agent.killed', 'agent.exploded'] })
    expect(bad.status).toBe(400)
    expect(bad.body.field).toBe('events.1')
    expect(bad.body.expected).toContain('balance')
    expect((await put(owner.token, { url: 'https://example.com/h', events: [] })).status).toBe(400)
    expect((await put(owner.token, { url: 'https://example.com/h', secret: 'whsec_mine' })).body).toMatchObject({ error: 'BAD_REQUEST', field: 'secret' })
  })

  test('no endpoint: GET and DELETE answer NOT_FOUND; deliveries and events are empty lists', async () => {
    const owner = await t.signup()
    expect((await t.req('GET', '/v1/webhooks', { token: owner.token })).body.error).toBe('NOT_FOUND')
    expect((await t.req('DELETE', '/v1/webhooks', { token: owner.token })).body.error).toBe('NOT_FOUND')
    expect((await t.req('GET', '/v1/webhooks/deliveries', { token: owner.token })).body).toEqual({ deliveries: [] })
    expect((await t.req('GET', '/v1/events', { token: owner.token })).body).toEqual({ events: [], next_cursor: null })
    expect((await t.req('GET', '/v1/events?limit=0', { token: owner.token })).body).toMatchObject({ error: 'BAD_REQUEST', field: 'limit' })
    expect((await t.req('GET', '/v1/events?cursor=nonsense', { token: owner.token })).body).toMatchObject({ error: 'BAD_REQUEST', field: 'cursor' })
  })

  test('the secret is shown once: a later PUT answers null; rotate_secret replaces it and the old one stops verifying', async () => {
    const owner = await t.signup()
    const first = await put(owner.token, { url: 'https://hooks.example.com/a' })
    expect(first.status).toBe(200)
    expect(first.body.secret).toMatch(/^whsec_/)
    const again = await put(owner.token, { url: 'https://hooks.example.com/b', events: ['cap.reached'] })
    expect(again.body).toMatchObject({ url: 'https://hooks.example.com/b', events: ['cap.reached'], secret: null })
    const got = await t.req('GET', '/v1/webhooks', { token: owner.token })
    expect(got.body).toEqual({ url: 'https://hooks.example.com/b', events: ['cap.reached'], created_at: first.body.created_at, updated_at: expect.any(String) })
    expect(JSON.stringify(got.body)).not.toContain('whsec_')

    const rotated = await put(owner.token, { url: 'https://hooks.example.com/b', rotate_secret: true })
    expect(rotated.body.secret).toMatch(/^whsec_/)
    expect(rotated.body.secret).not.toBe(first.body.secret)
    // A delivery signed now (what the worker sends) verifies with the new secret only.
    const ev = { id: 'evt_test', accountId: owner.account_id, type: 'cap.reached' as const, at: Date.now(), data: {} as never }
    const body = webhookPayload(ev)
    const ts = new Date()
    const stored = await t.s.db.db.query.webhookEndpoints.findFirst({ where: (w, { eq }) => eq(w.accountId, owner.account_id) })
    const headers = { 'webhook-id': ev.id, 'webhook-timestamp': String(Math.floor(ts.getTime() / 1000)), 'webhook-signature': new Webhook(stored!.secret).sign(ev.id, ts, body) }
    expect(() => new Webhook(rotated.body.secret).verify(body, headers)).not.toThrow()
    expect(() => new Webhook(first.body.secret).verify(body, headers)).toThrow()

    expect((await t.req('DELETE', '/v1/webhooks', { token: owner.token })).status).toBe(204)
    expect((await t.req('GET', '/v1/webhooks', { token: owner.token })).status).toBe(404)
  })

  test('missing or unknown bearer → UNAUTHORIZED', async () => {
    expect((await t.req('GET', '/v1/webhooks')).status).toBe(401)
    expect((await t.req('PUT', '/v1/webhooks', { token: 'sk_' + 'x'.repeat(43), body: { url: 'https://example.com/h' } })).status).toBe(401)
  })
})

describe('/v1/events cursor', () => {
  const b64 = (s: string) => Buffer.from(s).toString('base64url')
  test('garbage, a date out of range, a NUL in the id → BAD_REQUEST naming cursor, never a 5xx', async () => {
    const owner = await t.signup()
    for (const cursor of ['garbage', 'zzz', b64('99999999999999999999|evt_x'), b64('1e300|evt_x'), b64('-1e17|evt_x'), b64('1|evt_\u0000x'), b64('|evt_x'), b64('1|')]) {
      const r = await t.req('GET', `/v1/events?cursor=${encodeURIComponent(cursor)}`, { token: owner.token })
      expect([cursor, r.status, r.body.error, r.body.field]).toEqual([cursor, 400, 'BAD_REQUEST', 'cursor'])
    }
  })
})
