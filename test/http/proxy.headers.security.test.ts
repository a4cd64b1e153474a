/**
 * Header policy and key secrecy: our token and the client's cookies, host, forwarding metadata and
 * hop-by-hop headers never reach the provider; the provider key never reaches the client, even
 * when the provider echoes it back, split across chunks or in a header.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { rawRequest } from '../helpers/proxy'
import { vaultEnv, vaultKey } from '../helpers/vault'

const HOUSE = 'house-secret-key'
let t: TestApp
let base: string
beforeAll(async () => {
  t = await startTestApp({ env: { ...vaultEnv(), FAKE_HOUSE_KEY: HOUSE } })
  base = await t.listen()
})
afterAll(async () => {
  await t.close()
})

/** A raw POST of `{}` through the proxy with these headers, the provider answering 200: what it saw. */
async function seenUpstream(headers: Record<string, string>): Promise<Record<string, any>> {
  t.fake.handler = () => Response.json({ ok: true })
  const r = await rawRequest(base, '/proxy/fake/v1/chat', { ...headers, 'Content-Length': '2' }, 'POST', '{}')
  t.fake.handler = null
  expect(r.status).toBe(200)
  return t.fake.seen.at(-1)!
}

describe('request headers', () => {
  test('ours, cookies, host, forwarding and hop-by-hop headers are dropped; the provider key is injected', async () => {
    const a = await t.signup()
    const seen = await seenUpstream({
      Authorization: `Bearer ${a.token}`,
      'X-Api-Key': a.token,
      Cookie: 'session=abc',
      Connection: 'keep-alive, X-Hop-Custom',
      'X-Hop-Custom': 'must-not-pass',
      'Keep-Alive': 'timeout=5',
      'Proxy-Authorization': 'Basic Zm9vOmJhcg==',
      TE: 'trailers',
      'X-Forwarded-For': '10.0.0.1',
      Forwarded: 'for=10.0.0.1',
      'X-Pab-Internal': 'x',
      'OpenAI-Organization': 'org-client-picked',
      'Content-Type': 'application/json',
    })
    expect(seen.headers.authorization).toBe(`Bearer ${HOUSE}`)
    for (const h of ['x-api-key', 'cookie', 'x-hop-custom', 'keep-alive', 'proxy-authorization', 'te', 'x-forwarded-for', 'forwarded', 'x-pab-internal'])
      expect(seen.headers[h]).toBeUndefined()
    expect(seen.headers.host).toBe(new URL(t.fake.url).host)
    // The house key's scope is the operator's (docs/api.md §12; the owner's lane: proxy.house-lane.security.test.ts).
    expect(seen.headers['openai-organization']).toBeUndefined()
    expect(seen.headers['accept-encoding']).toBe('identity')
    expect(JSON.stringify(seen)).not.toContain(a.token)
  })

  test("a client's own key in api-key, anthropic-api-key or x-goog-api-key never reaches the provider beside ours", async () => {
    const a = await t.signup()
    const seen = await seenUpstream({
      Authorization: `Bearer ${a.token}`,
      // Azure's SDK sends its key as api-key: ours, set as the agent's base-URL key, goes there too.
      'Api-Key': a.token,
      'Anthropic-Api-Key': 'sk-ant-client-own',
      'X-Goog-Api-Key': 'AIza-client-own',
      'Content-Type': 'application/json',
    })
    expect(seen.headers.authorization).toBe(`Bearer ${HOUSE}`)
    for (const h of ['api-key', 'anthropic-api-key', 'x-goog-api-key']) expect(seen.headers[h]).toBeUndefined()
    expect(JSON.stringify(seen)).not.toContain(a.token)
  })

  test('every X-Forwarded-* and Proxy-* request header is dropped', async () => {
    const a = await t.signup()
    const seen = await seenUpstream({
      Authorization: `Bearer ${a.token}`,
      'X-Forwarded-Port': '443',
      'X-Forwarded-Prefix': '/internal',
      'X-Forwarded-Server': 'edge-1',
      'Proxy-Foo': 'p',
    })
    for (const h of ['x-forwarded-port', 'x-forwarded-prefix', 'x-forwarded-server', 'proxy-foo']) expect(seen.headers[h]).toBeUndefined()
  })

  test('conflicting Content-Length and Transfer-Encoding, or an obs-fold header, is refused before the provider', async () => {
    const a = await t.signup()
    const smuggled = 'GET /v1/admin HTTP/1.1\r\nHost: x\r\n\r\n'
    const cases: [Record<string, string>, string][] = [
      [{ 'Content-Length': '4', 'Transfer-Encoding': 'chunked' }, `0\r\n\r\n${smuggled}`],
      [{ 'Transfer-Encoding': 'chunked', 'Content-Length': '60' }, `2\r\n{}\r\n0\r\n\r\n${smuggled}`],
      [{ 'Content-Length': '2', 'content-length': '40' }, `{}${smuggled}`],
      [{ 'Transfer-Encoding': 'identity, chunked' }, `2\r\n{}\r\n0\r\n\r\n${smuggled}`],
      [{ 'X-Folded': 'a\r\n b', 'Content-Length': '2' }, '{}'],
    ]
    const before = t.fake.seen.length
    for (const [headers, body] of cases) {
      const r = await rawRequest(base, '/proxy/fake/v1/chat', { Authorization: `Bearer ${a.token}`, ...headers }, 'POST', body)
      expect(r.status).toBe(400)
    }
    expect(t.fake.seen.length).toBe(before)
  })

  test('our token in x-api-key alone authenticates (the Anthropic SDK style)', async () => {
    const a = await t.signup()
    t.fake.handler = () => Response.json({ ok: true })
    const r = await t.req('POST', '/proxy/fake/v1/chat', { body: {}, headers: { 'x-api-key': a.token } })
    t.fake.handler = null
    expect(r.status).toBe(200)
    expect(t.fake.seen.at(-1)!.headers.authorization).toBe(`Bearer ${HOUSE}`)
    expect(JSON.stringify(t.fake.seen.at(-1))).not.toContain(a.token)
  })

  test('a vaulted key wins over the house key; the byok provider gets it in its own header', async () => {
    const a = await t.signup()
    await vaultKey(t, a.token, 'sk-vaulted-fake-0001-WXYZ', 'fakebyok')
    t.fake.handler = () => Response.json({ ok: true })
    const r = await t.req('POST', '/proxy/fakebyok/v1/chat', { token: a.token, body: {} })
    t.fake.handler = null
    expect(r.status).toBe(200)
    const seen = t.fake.seen.at(-1)!
    expect(seen.headers['x-api-key']).toBe('sk-vaulted-fake-0001-WXYZ')
    expect(seen.headers.authorization).toBeUndefined()
  })

  test('a vaulted key replaces the house key, and stops being used the moment it is deleted', async () => {
    const a = await t.signup()
    await vaultKey(t, a.token, 'sk-own-fake-key-0002-QRST', 'fake')
    t.fake.handler = () => Response.json({ ok: true })
    await t.req('POST', '/proxy/fake/v1/chat', { token: a.token, body: {} })
    expect(t.fake.seen.at(-1)!.headers.authorization).toBe('Bearer sk-own-fake-key-0002-QRST')
    expect((await t.req('DELETE', '/v1/keys/fake', { token: a.token })).status).toBe(204)
    await t.req('POST', '/proxy/fake/v1/chat', { token: a.token, body: {} })
    t.fake.handler = null
    expect(t.fake.seen.at(-1)!.headers.authorization).toBe(`Bearer ${HOUSE}`)
  })

  test('a static catalog header fills in when the client did not send it', async () => {
    const a = await t.signup()
    t.s.catalog.providers.get('fake')!.headers = { 'x-provider-version': '2024-01-01' }
    t.fake.handler = () => Response.json({ ok: true })
    await t.req('POST', '/proxy/fake/v1/chat', { token: a.token, body: {} })
    await t.req('POST', '/proxy/fake/v1/chat', { token: a.token, body: {}, headers: { 'x-provider-version': '2025-05-05' } })
    t.fake.handler = null
    delete t.s.catalog.providers.get('fake')!.headers
    expect(t.fake.seen.at(-2)!.headers['x-provider-version']).toBe('2024-01-01')
    expect(t.fake.seen.at(-1)!.headers['x-provider-version']).toBe('2025-05-05')
  })
})

describe('response headers and body', () => {
  test('set-cookie, hop-by-hop and alt-svc are dropped; our call id, charge and balance are added', async () => {
    const a = await t.signup()
    t.fake.handler = () =>
      Response.json({ ok: true }, { headers: { 'set-cookie': 'cf=1', 'alt-svc': 'h3=":443"', 'x-request-id': 'req_1', connection: 'x-up-hop', 'x-up-hop': '1' } })
    const r = await fetch(`${base}/proxy/fake/v1/chat`, { method: 'POST', body: '{}', headers: { authorization: `Bearer ${a.token}` } })
    t.fake.handler = null
    expect(await r.json()).toEqual({ ok: true })
    expect(r.headers.get('set-cookie')).toBeNull()
    expect(r.headers.get('alt-svc')).toBeNull()
    expect(r.headers.get('x-up-hop')).toBeNull()
    expect(r.headers.get('x-request-id')).toBe('req_1')
    expect(r.headers.get('x-pab-call-id')).toMatch(/^call_/)
    expect(r.headers.get('x-pab-charged')).toBe('3')
    expect(r.headers.get('x-pab-balance')).toBe('497')
  })

  test('Proxy-* and Set-Cookie2 from the provider are dropped', async () => {
    const a = await t.signup()
    t.fake.handler = () => Response.json({ ok: true }, { headers: { 'proxy-foo': '1', 'proxy-status': 'upstream', 'set-cookie2': 'c=3', 'x-request-id': 'req_2' } })
    const r = await fetch(`${base}/proxy/fake/v1/chat`, { method: 'POST', body: '{}', headers: { authorization: `Bearer ${a.token}` } })
    t.fake.handler = null
    expect(await r.json()).toEqual({ ok: true })
    for (const h of ['proxy-foo', 'proxy-status', 'set-cookie2']) expect(r.headers.get(h)).toBeNull()
    expect(r.headers.get('x-request-id')).toBe('req_2')
  })

  test('a provider echoing the key — in a header, in a JSON error, split across streamed chunks — shows only a mask', async () => {
    const a = await t.signup()
    const mask = '*'.repeat(HOUSE.length)
    t.fake.handler = () =>
      Response.json({ error: { message: `Incorrect API key provided: ${HOUSE}.` } }, { status: 401, headers: { 'x-debug-key': HOUSE } })
    const r = await fetch(`${base}/proxy/fake/v1/chat`, { method: 'POST', body: '{}', headers: { authorization: `Bearer ${a.token}` } })
    const text = await r.text()
    expect(r.status).toBe(401)
    expect(text).not.toContain(HOUSE)
    expect(JSON.parse(text).error.message).toBe(`Incorrect API key provided: ${mask}.`)
    expect(r.headers.get('x-debug-key')).toBe(mask)

    // The key cut in three pieces across chunks, with pauses so that they arrive as separate reads.
    const parts = ['data: key=house-sec', 'ret-k', 'ey!\n\n', 'data: house-\n\n']
    t.fake.handler = () => separateReads(parts)
    const s = await fetch(`${base}/proxy/fake/v1/chat`, { method: 'POST', body: '{}', headers: { authorization: `Bearer ${a.token}` } })
    const streamed = await s.text()
    t.fake.handler = null
    expect(streamed).toBe(`data: key=${mask}!\n\ndata: house-\n\n`)
  })
})

describe('the key in a spelling the client decodes back into it', () => {
  // A vaulted key may be any printable text; base64 keys carry the + / = that JSON and URL encoders rewrite.
  const KEY = 'hk+Ab/Cd0123456789=='
  const mask = (s: string) => '*'.repeat(s.length)
  const slashEscaped = KEY.replace(/\//g, '\\/') // as PHP's json_encode writes it
  const unicodeEscaped = [...KEY].map((c) => (/[A-Za-z0-9]/.test(c) ? c : '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'))).join('')
  const upperEscaped = unicodeEscaped.replace(/\\u00(..)/g, (_, h: string) => '\\u00' + h.toUpperCase())

  test('proxy: JSON-escaped in the body and percent-encoded in a header, each shows only a mask of its own length', async () => {
    const a = await t.signup()
    await vaultKey(t, a.token, KEY, 'fake')
    const body = `{"error":{"message":"Incorrect API key provided: ${slashEscaped}","k2":"${unicodeEscaped}","k3":"${upperEscaped}"}}`
    t.fake.handler = () =>
      new Response(body, {
        status: 401,
        headers: { 'content-type': 'application/json', 'x-debug-key': encodeURIComponent(KEY), 'x-debug-lower': encodeURIComponent(KEY).replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase()) },
      })
    const r = await fetch(`${base}/proxy/fake/v1/chat`, { method: 'POST', body: '{}', headers: { authorization: `Bearer ${a.token}` } })
    const text = await r.text()
    t.fake.handler = null
    expect(t.fake.seen.at(-1)!.headers.authorization).toBe(`Bearer ${KEY}`)
    expect(r.status).toBe(401)
    expect(text.length).toBe(body.length)
    expect(JSON.parse(text)).toEqual({
      error: { message: `Incorrect API key provided: ${mask(slashEscaped)}`, k2: mask(unicodeEscaped), k3: mask(upperEscaped) },
    })
    expect(r.headers.get('x-debug-key')).toBe(mask(encodeURIComponent(KEY)))
    expect(r.headers.get('x-debug-lower')).toBe(mask(encodeURIComponent(KEY)))
  })

  test('proxy: a spelling split across streamed chunks shows only a mask', async () => {
    const a = await t.signup()
    await vaultKey(t, a.token, KEY, 'fake')
    const parts = [`data: {"k":"${unicodeEscaped.slice(0, 5)}`, unicodeEscaped.slice(5, 9), `${unicodeEscaped.slice(9)}"}\n\n`, 'data: hk\\u002\n\n']
    t.fake.handler = () => separateReads(parts)
    const s = await fetch(`${base}/proxy/fake/v1/chat`, { method: 'POST', body: '{}', headers: { authorization: `Bearer ${a.token}` } })
    const streamed = await s.text()
    t.fake.handler = null
    expect(streamed).toBe(`data: {"k":"${mask(unicodeEscaped)}"}\n\ndata: hk\\u002\n\n`)
  })

  test('/v1/call: a JSON result with the key JSON-escaped shows only a mask', async () => {
    const a = await t.signup()
    await vaultKey(t, a.token, KEY)
    t.fake.handler = () => new Response(`{"error":"Incorrect API key provided: ${slashEscaped}"}`, { status: 401, headers: { 'content-type': 'application/json' } })
    const r = await t.req('POST', '/v1/call/test.byok', { token: a.token, body: { q: 'x' } })
    t.fake.handler = null
    expect(t.fake.seen.at(-1)!.headers['x-api-key']).toBe(KEY)
    expect(r.status).toBe(200)
    expect(JSON.stringify(r.body)).not.toContain(KEY)
    expect(r.body.result).toEqual({ error: `Incorrect API key provided: ${mask(slashEscaped)}` })
  })
})

/** An event stream of `parts`, with pauses between them so that each arrives as a read of its own. */
function separateReads(parts: string[]): Response {
  let i = 0
  return new Response(
    new ReadableStream({
      async pull(c) {
        if (i === parts.length) return c.close()
        if (i > 0) await Bun.sleep(5)
        c.enqueue(new TextEncoder().encode(parts[i++]!))
      },
    }),
    { headers: { 'content-type': 'text/event-stream' } },
  )
}
