import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { startTestApp, type TestApp } from '../helpers/harness'
import { newLink, submitForm, vaultEnv } from '../helpers/vault'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: vaultEnv() })
})
afterAll(async () => {
  await t.close()
})

const json = { accept: 'application/json' }
const html = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' }

describe('link requests', () => {
  test('an unknown provider is BAD_REQUEST naming the field', async () => {
    const a = await t.signup()
    const r = await t.req('POST', '/v1/keys/link', { token: a.token, body: { provider: 'nosuch' } })
    expect(r.status).toBe(400)
    expect(r.body).toMatchObject({ error: 'BAD_REQUEST', field: 'provider' })
    expect(r.body.expected).toContain('fakebyok')
  })

  test('a missing provider is BAD_REQUEST', async () => {
    const a = await t.signup()
    const r = await t.req('POST', '/v1/keys/link', { token: a.token, body: {} })
    expect(r.status).toBe(400)
    expect(r.body.error).toBe('BAD_REQUEST')
  })

  test('every key route needs a bearer', async () => {
    for (const [method, path] of [['POST', '/v1/keys/link'], ['GET', '/v1/keys'], ['DELETE', '/v1/keys/fakebyok']] as const) {
      const r = await t.req(method, path, { body: method === 'POST' ? { provider: 'fakebyok' } : undefined })
      expect(r.status).toBe(401)
      expect(r.body.error).toBe('UNAUTHORIZED')
    }
  })

  test('DELETE of a key the account does not have is NOT_FOUND', async () => {
    const a = await t.signup()
    const r = await t.req('DELETE', '/v1/keys/fakebyok', { token: a.token })
    expect(r.status).toBe(404)
    expect(r.body.error).toBe('NOT_FOUND')
  })
})

describe('invalid links', () => {
  test('a malformed code is LINK_INVALID: a readable page for browsers, the error JSON for JSON clients', async () => {
    const page = await t.req('GET', '/vault/not-a-code', { headers: html })
    expect(page.status).toBe(400)
    expect(page.headers.get('content-type')).toStartWith('text/html')
    expect(page.text).toContain('LINK_INVALID')
    expect(page.text).toContain('POST /v1/keys/link')
    expect(page.headers.get('cache-control')).toBe('no-store')
    expect(page.headers.get('referrer-policy')).toBe('no-referrer')

    const api = await t.req('GET', '/vault/not-a-code', { headers: json })
    expect(api.status).toBe(400)
    expect(api.body).toMatchObject({ error: 'LINK_INVALID', message: expect.stringContaining('POST /v1/keys/link') })
  })

  test('a well-formed code that was never issued is LINK_INVALID on GET and POST', async () => {
    const code = randomBytes(32).toString('base64url')
    expect((await t.req('GET', `/vault/${code}`, { headers: json })).body.error).toBe('LINK_INVALID')
    const r = await t.req('POST', `/vault/${code}`, { body: { key: 'sk-whatever-1234' }, headers: json })
    expect(r.status).toBe(400)
    expect(r.body.error).toBe('LINK_INVALID')
  })

  test('a link past its 10 minutes is LINK_INVALID and stores nothing', async () => {
    const a = await t.signup()
    const code = await newLink(t, a.token)
    t.clock.advance(600_001)
    const page = await t.req('GET', `/vault/${code}`, { headers: html })
    expect(page.status).toBe(400)
    expect(page.text).toContain('LINK_INVALID')
    const r = await submitForm(t, code, 'sk-too-late-key-LATE', json)
    expect(r.status).toBe(400)
    expect(r.body.error).toBe('LINK_INVALID')
    expect((await t.req('GET', '/v1/keys', { token: a.token })).body.keys).toEqual([])
  })

  test('a link is still good just before expiry', async () => {
    const a = await t.signup()
    const code = await newLink(t, a.token)
    t.clock.advance(599_000)
    expect((await submitForm(t, code, 'sk-just-in-time-TIME')).status).toBe(200)
  })
})

describe('a dead link names its remedy', () => {
  test('LINK_INVALID and LINK_USED carry renew_via: POST /v1/keys/link (the registry\'s context, as recovery links do)', async () => {
    const a = await t.signup()
    const used = await newLink(t, a.token)
    expect((await submitForm(t, used, 'sk-renew-via-used-RNEW')).status).toBe(200)
    const expired = await newLink(t, a.token)
    t.clock.advance(600_001)
    for (const [code, error] of [['not-a-code', 'LINK_INVALID'], [randomBytes(32).toString('base64url'), 'LINK_INVALID'], [expired, 'LINK_INVALID'], [used, 'LINK_USED']] as const) {
      const view = await t.req('GET', `/vault/${code}`, { headers: json })
      expect(view.body).toMatchObject({ error, renew_via: 'POST /v1/keys/link' })
      const submit = await submitForm(t, code, 'sk-renew-via-late-LATE', json)
      expect(submit.body).toMatchObject({ error, renew_via: 'POST /v1/keys/link' })
    }
  })
})

describe('the link is judged before the pasted key', () => {
  test('malformed, unknown or expired link with a bad key → LINK_INVALID, page and JSON', async () => {
    const a = await t.signup()
    const expired = await newLink(t, a.token)
    t.clock.advance(600_001)
    for (const code of ['not-a-code', randomBytes(32).toString('base64url'), expired]) {
      for (const bad of ['', 'has a space']) {
        const api = await submitForm(t, code, bad, json)
        expect([code, api.status, api.body.error]).toEqual([code, 400, 'LINK_INVALID'])
        const page = await submitForm(t, code, bad)
        expect(page.status).toBe(400)
        expect(page.text).toContain('LINK_INVALID')
      }
      const plain = await t.req('POST', `/vault/${code}`, { body: 'x', headers: { 'content-type': 'text/plain', ...json } })
      expect(plain.body.error).toBe('LINK_INVALID')
    }
  })

  test('a used link with a bad key → LINK_USED (409), page and JSON', async () => {
    const a = await t.signup()
    const code = await newLink(t, a.token)
    expect((await submitForm(t, code, 'sk-used-once-USED')).status).toBe(200)
    const api = await submitForm(t, code, 'short', json)
    expect([api.status, api.body.error]).toEqual([409, 'LINK_USED'])
    const page = await submitForm(t, code, '')
    expect(page.status).toBe(409)
    expect(page.text).toContain('LINK_USED')
  })
})

describe('single use', () => {
  test('after a store the link answers LINK_USED (409) on reload and on resubmit', async () => {
    const a = await t.signup()
    const code = await newLink(t, a.token)
    expect((await submitForm(t, code, 'sk-first-use-ONCE')).status).toBe(200)

    const reload = await t.req('GET', `/vault/${code}`, { headers: html })
    expect(reload.status).toBe(409)
    expect(reload.text).toContain('LINK_USED')
    const resubmit = await submitForm(t, code, 'sk-second-use-TWICE')
    expect(resubmit.status).toBe(409)
    expect(resubmit.text).toContain('LINK_USED')
    const api = await submitForm(t, code, 'sk-second-use-TWICE', json)
    expect(api.body).toMatchObject({ error: 'LINK_USED' })
    // Still used after the link's own 10 minutes: the marker outlives it.
    t.clock.advance(700_000)
    expect((await t.req('GET', `/vault/${code}`, { headers: json })).body.error).toBe('LINK_USED')

    const list = await t.req('GET', '/v1/keys', { token: a.token })
    expect(list.body.keys.map((k: { last4: string }) => k.last4)).toEqual(['ONCE'])
  })

  test('two concurrent submissions: exactly one stores, the other is LINK_USED', async () => {
    const a = await t.signup()
    const code = await newLink(t, a.token)
    const keys = ['sk-racer-one-R111', 'sk-racer-two-R222']
    const answers = await Promise.all(keys.map((k) => submitForm(t, code, k, json)))
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409])
    const winner = answers.findIndex((r) => r.status === 200)
    expect(answers[1 - winner]!.body.error).toBe('LINK_USED')
    const list = await t.req('GET', '/v1/keys', { token: a.token })
    expect(list.body.keys).toHaveLength(1)
    expect(list.body.keys[0].last4).toBe(keys[winner]!.slice(-4))
    await t.req('POST', '/v1/call/test.byok', { token: a.token, body: {} })
    expect(t.fake.seen.at(-1)!.headers['x-api-key']).toBe(keys[winner])
  })
})

describe('bad submissions do not burn the link', () => {
  test('an empty, short or spaced key is BAD_REQUEST on field key; the link still works after', async () => {
    const a = await t.signup()
    const code = await newLink(t, a.token)
    for (const bad of ['', 'short', 'has a space in it', 'x'.repeat(4097)]) {
      const r = await submitForm(t, code, bad, json)
      expect(r.status).toBe(400)
      expect(r.body).toMatchObject({ error: 'BAD_REQUEST', field: 'key' })
    }
    const page = await submitForm(t, code, '')
    expect(page.status).toBe(400)
    expect(page.headers.get('content-type')).toStartWith('text/html')
    expect(page.text).toContain('BAD_REQUEST')
    expect((await submitForm(t, code, 'sk-finally-right-GOOD')).status).toBe(200)
  })

  test('invalid JSON and an unknown content type are BAD_REQUEST and never echo the body', async () => {
    const a = await t.signup()
    const code = await newLink(t, a.token)
    const broken = await t.req('POST', `/vault/${code}`, { body: '{"key": "sk-secret-in-broken-json', headers: json })
    expect(broken.status).toBe(400)
    expect(broken.body).toMatchObject({ error: 'BAD_REQUEST', field: 'body' })
    expect(broken.text).not.toContain('sk-secret')
    const plain = await t.req('POST', `/vault/${code}`, { body: 'sk-secret-as-text', headers: { 'content-type': 'text/plain', ...json } })
    expect(plain.status).toBe(400)
    expect(plain.body).toMatchObject({ error: 'BAD_REQUEST', field: 'content-type' })
    expect((await submitForm(t, code, 'sk-after-bad-bodies-OKAY')).status).toBe(200)
  })
})
