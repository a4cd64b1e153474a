/**
 * Path safety of the proxy, on the raw request target: each request is written byte for byte to a
 * TCP socket (no client library normalizes it first) with a valid token, and must be refused
 * before authentication, debit or any upstream connection — the fake records zero requests and
 * the balance never moves.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { rawRequest } from '../helpers/proxy'

let t: TestApp
let base: string
let token: string

beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_TOKEN: '100000', RATE_LIMIT_PER_IP: '100000' } })
  t.fake.handler = () => Response.json({ ok: true })
  base = await t.listen()
  token = (await t.signup()).token
})
afterAll(async () => {
  await t.close()
})

const BAD: [target: string, reason: string][] = [
  ['/proxy/fake/v1/../admin', 'dot_segment'],
  ['/proxy/fake/../admin', 'dot_segment'],
  ['/proxy/fake/%2e%2e/admin', 'dot_segment'],
  ['/proxy/fake/v1/%2E%2E/%2E%2E/admin', 'dot_segment'],
  ['/proxy/fake/v1/.%2e/admin', 'dot_segment'],
  ['/proxy/fake/v1/%252e%252e/admin', 'dot_segment'],
  ['/proxy/fake/v1/%25252e%25252e/admin', 'dot_segment'],
  ['/proxy/fake/v1/x%2f..%2f..%2fadmin', 'dot_segment'],
  ['/proxy/fake/v1/./chat', 'dot_segment'],
  ['/proxy/fake/v1/..;/admin', 'dot_segment'],
  ['/x/../proxy/fake/v1/chat', 'non_canonical'],
  ['/proxy/fake/v1\\..\\admin', 'backslash'],
  ['/proxy/fake/v1/%5c..%5cadmin', 'backslash'],
  ['/proxy/fake/v1/%255cadmin', 'backslash'],
  ['/proxy/fake//v1/chat', 'double_slash'],
  ['/proxy/fake/v1//evil.example/chat', 'double_slash'],
  ['/proxy/fake/v1/%2f%2fevil.example', 'double_slash'],
  ['/proxy/fake/v1/https://evil.example/x', 'double_slash'],
  ['/proxy/fake/v1/http:%2fevil.example', 'scheme'],
  ['/proxy/fake/v1/user@evil.example', 'at_sign'],
  ['/proxy/fake/v1/%40evil.example', 'at_sign'],
  ['/proxy/fake/v1/%00x', 'control_character'],
  ['/proxy/fake/v1/%zz', 'bad_percent_encoding'],
  ['/proxy/fake/v2/chat', 'outside_allowed_paths'],
  ['/proxy/fake/admin', 'outside_allowed_paths'],
  ['/proxy/fake/v1', 'outside_allowed_paths'],
  ['/proxy/fake/%76%31/chat', 'outside_allowed_paths'],
]

describe('raw request targets that leave the allowed paths are refused with no upstream request', () => {
  for (const [target, reason] of BAD)
    test(`${target} → PROXY_BAD_PATH (${reason})`, async () => {
      for (const headers of [{ authorization: `Bearer ${token}` }, { 'x-api-key': token }] as Record<string, string>[]) {
        const r = await rawRequest(base, target, headers, 'POST')
        expect(r.status).toBe(400)
        expect(r.body).toMatchObject({ error: 'PROXY_BAD_PATH', reason })
      }
      expect(t.fake.seen).toHaveLength(0)
    })

  test('an unknown provider, or one without a proxy route, is PROXY_UNKNOWN_PROVIDER', async () => {
    for (const target of ['/proxy/nope/v1/chat', '/proxy/nokey/v1/chat', '/proxy/FAKE/v1/chat']) {
      const r = await rawRequest(base, target, { authorization: `Bearer ${token}` })
      expect(r.status).toBe(404)
      expect(r.body.error).toBe('PROXY_UNKNOWN_PROVIDER')
    }
    expect(t.fake.seen).toHaveLength(0)
  })

  test('a path check comes before authentication: no token still gets PROXY_BAD_PATH', async () => {
    const r = await rawRequest(base, '/proxy/fake/%2e%2e/admin')
    expect(r.body.error).toBe('PROXY_BAD_PATH')
  })

  test('none of the refusals debited or filed anything', async () => {
    const bal = await t.req('GET', '/v1/balance', { token })
    expect(bal.body.balance).toBe(500)
    const act = await t.req('GET', '/v1/activity', { token })
    expect(act.body.calls).toEqual([])
    expect(t.fake.seen).toHaveLength(0)
  })

  test('an absolute-form target is routed by its path; its host is ignored, the upstream is the catalog’s', async () => {
    const before = t.fake.seen.length
    const r = await rawRequest(base, 'http://evil.example/proxy/fake/v1/chat', { authorization: `Bearer ${token}` }, 'POST')
    expect(r.status).toBe(200)
    expect(t.fake.seen.length).toBe(before + 1)
    expect(t.fake.seen.at(-1)!.path).toBe('/v1/chat')
  })

  test('control: the same socket client with a clean path is forwarded, path and query as sent', async () => {
    const before = t.fake.seen.length
    const r = await rawRequest(base, '/proxy/fake/v1/chat/completions?x=%2Fa&y=1', { authorization: `Bearer ${token}` }, 'POST')
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ ok: true })
    expect(t.fake.seen.length).toBe(before + 1)
    expect(t.fake.seen.at(-1)!.path).toBe('/v1/chat/completions?x=%2Fa&y=1')
  })
})
