import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { newLink, submitForm, vaultDb, vaultEnv, vaultKey } from '../helpers/vault'

let t: TestApp
let db: ReturnType<typeof vaultDb>
beforeAll(async () => {
  t = await startTestApp({ env: vaultEnv() })
  db = vaultDb(t)
})
afterAll(async () => {
  await db.close()
  await t.close()
})

describe('vault link → page → stored key → byok call', () => {
  test('a link is a one-time URL under BASE_URL that expires in 10 minutes', async () => {
    const a = await t.signup()
    const r = await t.req('POST', '/v1/keys/link', { token: a.token, body: { provider: 'fakebyok' } })
    expect(r.status).toBe(201)
    expect(r.body.url).toMatch(/^http:\/\/pab\.test\/vault\/[A-Za-z0-9_-]{43}$/)
    expect(r.body.provider).toBe('fakebyok')
    expect(r.body.expires_at).toBe(new Date(t.clock.now() + 600_000).toISOString())
    const again = await t.req('POST', '/v1/keys/link', { token: a.token, body: { provider: 'fakebyok' } })
    expect(again.body.url).not.toBe(r.body.url)
  })

  test('the page names the provider and the account e-mail, and carries the strict headers', async () => {
    const email = `page-${t.prefix}@example.com`
    const a = await t.signup(email)
    const code = await newLink(t, a.token)
    const r = await t.req('GET', `/vault/${code}`, { headers: { accept: 'text/html' } })
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toStartWith('text/html')
    expect(r.text).toContain('fakebyok')
    expect(r.text).toContain(email)
    expect(r.text).toContain('name="key"')
    expect(r.text).toContain(`action="/vault/${code}"`)
    expect(r.text).not.toContain('<script')
    expect(r.headers.get('content-security-policy')).toContain("default-src 'none'")
    expect(r.headers.get('content-security-policy')).toContain("form-action 'self'")
    expect(r.headers.get('referrer-policy')).toBe('no-referrer')
    expect(r.headers.get('cache-control')).toBe('no-store')
  })

  test('a pasted key is stored, confirmed by its last 4, listed, and sent upstream on a byok call', async () => {
    const a = await t.signup()
    const key = 'sk-fake-byok-0001-WXYZ'
    const r = await submitForm(t, await newLink(t, a.token), key)
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toStartWith('text/html')
    expect(r.text).toContain('WXYZ')
    expect(r.text).not.toContain(key)

    const list = await t.req('GET', '/v1/keys', { token: a.token })
    expect(list.status).toBe(200)
    expect(list.body).toEqual({ keys: [{ provider: 'fakebyok', last4: 'WXYZ', created_at: new Date(t.clock.now()).toISOString() }] })
    expect(list.text).not.toContain(key)

    const call = await t.req('POST', '/v1/call/test.byok', { token: a.token, body: { q: 'hi' } })
    expect(call.status).toBe(200)
    expect(call.body).toMatchObject({ slug: 'test.byok', charged: 1, balance: 499, provider_status: 200 })
    const seen = t.fake.seen.at(-1)!
    expect(seen.headers['x-api-key']).toBe(key)
    expect(seen.headers.authorization).toBeUndefined()
    expect(call.text).not.toContain(key)
  })

  test('a JSON client stores with {key} and gets JSON back; a new store replaces the old key', async () => {
    const a = await t.signup()
    await vaultKey(t, a.token, 'sk-first-key-AAAA')
    const code = await newLink(t, a.token)
    const r = await t.req('POST', `/vault/${code}`, { body: { key: '  sk-second-key-BBBB\n' }, headers: { accept: 'application/json' } })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ provider: 'fakebyok', last4: 'BBBB', created_at: expect.any(String) })
    const list = await t.req('GET', '/v1/keys', { token: a.token })
    expect(list.body.keys).toHaveLength(1)
    expect(list.body.keys[0].last4).toBe('BBBB')
    await t.req('POST', '/v1/call/test.byok', { token: a.token, body: {} })
    expect(t.fake.seen.at(-1)!.headers['x-api-key']).toBe('sk-second-key-BBBB')
  })

  test('a multipart form works too', async () => {
    const a = await t.signup()
    const code = await newLink(t, a.token)
    const form = new FormData()
    form.set('key', 'sk-multipart-key-MPMP')
    const res = await t.app.handle(new Request(`http://pab.test/vault/${code}`, { method: 'POST', body: form }))
    expect(res.status).toBe(200)
    expect(await res.text()).toContain('MPMP')
  })

  test('two stores of the same key use fresh data keys and nonces', async () => {
    const a = await t.signup()
    const key = 'sk-same-key-twice-SAME'
    await vaultKey(t, a.token, key)
    const [first] = await db.rows(a.account_id)
    await vaultKey(t, a.token, key)
    const [second] = await db.rows(a.account_id)
    expect(first!.last4).toBe('SAME')
    expect(second!.last4).toBe('SAME')
    expect(second!.nonce.length).toBe(12)
    expect(second!.dek_nonce.length).toBe(12)
    expect(second!.nonce.equals(first!.nonce)).toBe(false)
    expect(second!.ciphertext.equals(first!.ciphertext)).toBe(false)
    expect(second!.dek_nonce.equals(first!.dek_nonce)).toBe(false)
    expect(second!.wrapped_dek.equals(first!.wrapped_dek)).toBe(false)
    expect(second!.ciphertext.includes(Buffer.from(key))).toBe(false)
  })

  test('DELETE removes the key: 204, gone from the list, the byok call asks for a link again', async () => {
    const a = await t.signup()
    await vaultKey(t, a.token, 'sk-to-be-deleted-DDDD')
    const del = await t.req('DELETE', '/v1/keys/fakebyok', { token: a.token })
    expect(del.status).toBe(204)
    expect(del.text).toBe('')
    expect((await t.req('GET', '/v1/keys', { token: a.token })).body).toEqual({ keys: [] })
    const call = await t.req('POST', '/v1/call/test.byok', { token: a.token, body: {} })
    expect(call.status).toBe(402)
    expect(call.body).toMatchObject({ error: 'BYOK_REQUIRED', provider: 'fakebyok', link_via: 'POST /v1/keys/link' })
  })
})
