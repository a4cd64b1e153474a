/**
 * MAX_BODY_BYTES is exact and always answered the same way, through the production listener (app.handle
 * never meets Bun's own limit): `limit` bytes pass, `limit + 1` get BAD_REQUEST (field body) with
 * status 413 as JSON, whether the size is declared (Content-Length) or not (chunked), however far past
 * the limit, on ordinary routes and on /proxy (where a refused body is not charged).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'

const LIMIT = 4096
let t: TestApp
let base: string
let token: string
beforeAll(async () => {
  t = await startTestApp({ env: { MAX_BODY_BYTES: String(LIMIT) } })
  base = await t.listen()
  token = (await t.signup()).token
})
afterAll(async () => {
  await t.close()
})

/** A JSON object of exactly `size` bytes: {"q":"xxx…"}. */
const jsonOf = (size: number) => `{"q":"${'x'.repeat(size - 8)}"}`

/** The body streamed in small chunks, so that no Content-Length goes with it. */
function chunked(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text)
  let at = 0
  return new ReadableStream({
    pull(c) {
      if (at >= bytes.length) return c.close()
      c.enqueue(bytes.slice(at, at + 1000))
      at += 1000
    },
  })
}

async function send(path: string, body: string, how: 'length' | 'chunked', method = 'POST') {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: how === 'length' ? body : chunked(body),
    duplex: 'half',
  } as RequestInit)
  const text = await res.text()
  let json: any = null
  try {
    json = JSON.parse(text)
  } catch {}
  return { status: res.status, type: res.headers.get('content-type'), json, text }
}

function tooLarge(r: Awaited<ReturnType<typeof send>>) {
  expect({ status: r.status, type: r.type, error: r.json?.error, field: r.json?.field }).toEqual({ status: 413, type: 'application/json', error: 'BAD_REQUEST', field: 'body' })
}

const balance = async () => (await t.req('GET', '/v1/balance', { token })).body.balance as number

describe.each(['length', 'chunked'] as const)('a body sent with %s', (how) => {
  test('a JSON route (PUT /v1/policies): the limit passes, one byte more is 413 JSON', async () => {
    const at = `{}${' '.repeat(LIMIT - 2)}`
    expect((await send('/v1/policies', at, how, 'PUT')).status).toBe(200)
    tooLarge(await send('/v1/policies', at + ' ', how, 'PUT'))
  })

  test('a capability call: the limit passes, one byte more is 413 JSON', async () => {
    expect((await send('/v1/call/test.echo', jsonOf(LIMIT), how)).status).toBe(200)
    tooLarge(await send('/v1/call/test.echo', jsonOf(LIMIT + 1), how))
  })

  test('far past the limit (more than Bun would take for it) is still 413 JSON', async () => {
    tooLarge(await send('/v1/call/test.echo', jsonOf(LIMIT + 1500), how))
    tooLarge(await send('/v1/policies', jsonOf(LIMIT * 40), how, 'PUT'))
  })

  test('the proxy: the limit is forwarded, one byte more is 413 JSON and not charged', async () => {
    t.fake.handler = (_req, seen) => Response.json({ got: seen.body.length })
    try {
      const before = await balance()
      const ok = await send('/proxy/fake/v1/echo', jsonOf(LIMIT), how)
      expect(ok.status).toBe(200)
      expect(ok.json.got).toBe(LIMIT)
      const charged = before - (await balance())
      const b = await balance()
      tooLarge(await send('/proxy/fake/v1/echo', jsonOf(LIMIT + 1), how))
      // Refunded by the time the answer is out (a refused body is never the caller's bill).
      expect(await balance()).toBe(b)
      expect(charged).toBeGreaterThan(0)
    } finally {
      t.fake.handler = null
    }
  })
})
