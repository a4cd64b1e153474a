/**
 * What the paid call passes between the caller and the provider stays as it was written: a JSON
 * body's params, a GET capability's query values and the provider's JSON answer are never parsed
 * and serialised again on the way (a 64-bit id would come out rounded, 1e400 as null, 1.10 as 1.1).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestApp, testCatalog, type TestApp } from '../helpers/harness'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp({
    catalog: (url) => {
      const c = testCatalog(url) as { capabilities: Record<string, unknown>[] }
      const echo = c.capabilities.find((x) => x.slug === 'test.echo')!
      return { ...c, capabilities: [...c.capabilities, { ...echo, slug: 'test.lookup', method: 'GET', description: 'look an id up' }] }
    },
  })
})
afterAll(async () => {
  await t.close()
})

test('a GET capability: non-string params reach the provider\'s query as the caller wrote them', async () => {
  const a = await t.signup()
  const r = await t.req('POST', '/v1/call/test.lookup', { token: a.token, body: '{"q": "x", "id": 12345678901234567890, "price": 1.10, "tags": ["a", 2.50]}' })
  expect(r.status).toBe(200)
  const q = new URL(t.fake.seen.at(-1)!.path, 'http://x').searchParams
  expect(t.fake.seen.at(-1)!.method).toBe('GET')
  expect([q.get('q'), q.get('id'), q.get('price'), q.get('tags')]).toEqual(['x', '12345678901234567890', '1.10', '["a", 2.50]'])
})

test('the provider\'s JSON reaches the caller in `result` as it sent it: no number rounded, nothing re-serialised', async () => {
  const a = await t.signup()
  // A 64-bit id, a price with its trailing zero, a number past a double, and the provider's own layout.
  const provider = '{\n  "id": 12345678901234567890,\n  "price": 1.10,\n  "huge": 1e400,\n  "nested": {"a": [1, 2.50]}\n}'
  t.fake.handler = () => new Response(provider, { headers: { 'content-type': 'application/json' } })
  try {
    const r = await t.req('POST', '/v1/call/test.echo', { token: a.token, body: { q: 'x' } })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ slug: 'test.echo', charged: 5, balance: 495, provider_status: 200 })
    expect(r.text).toEndWith(`"result":${provider}}`)
  } finally {
    t.fake.handler = null
  }
})

test('the caller\'s params reach the provider as the caller wrote them: no number rounded', async () => {
  const a = await t.signup()
  const raw = '{"q": "x", "id": 12345678901234567890, "price": 1.10}'
  const r = await t.req('POST', '/v1/call/test.echo', { token: a.token, body: raw })
  expect(r.status).toBe(200)
  expect(t.fake.seen.at(-1)!.body).toBe(raw)
})
