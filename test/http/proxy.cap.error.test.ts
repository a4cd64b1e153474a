/**
 * The response cap and the client's disconnect, on a real listening server: an oversize body is
 * refused (announced by Content-Length) or cut off (streamed past the cap), the upstream request is
 * aborted and the debit refunded; a client that goes away takes its upstream request with it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { holdKeyRead } from '../helpers/key-read-hold'
import { checkRedisInvariant, redisBalance } from '../helpers/ledger'
import { eventually } from '../helpers/proxy'

const CAP = 64 * 1024
let t: TestApp
let base: string
beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_TOKEN: '100000', PROXY_MAX_RESPONSE_BYTES: String(CAP) } })
  base = await t.listen()
})
afterAll(async () => {
  await t.close()
})

const post = (token: string, init: RequestInit = {}) =>
  fetch(`${base}/proxy/fake/v1/chat`, { method: 'POST', body: '{}', ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers } })

/**
 * A fake body of 16 KiB chunks that records how it ended. With `gate`, it sends one chunk, then
 * waits for the gate (the client holding that chunk) before sending the rest at once.
 */
function chunkedBody(total: number, log: string[], opt: { stallAfter?: number; gate?: Promise<void> } = {}) {
  let sent = 0
  return new ReadableStream<Uint8Array>({
    async pull(c) {
      if (opt.stallAfter !== undefined && sent >= opt.stallAfter) {
        log.push('stalled')
        await new Promise(() => {})
      }
      if (sent >= total) {
        log.push('completed')
        return c.close()
      }
      if (sent === 16384 && opt.gate) await Promise.race([opt.gate, Bun.sleep(5000)])
      sent += 16384
      c.enqueue(new Uint8Array(16384).fill(0x61))
    },
    cancel() {
      log.push('cancelled')
    },
  })
}

const activity = (token: string, n = 1) => eventually(() => t.req('GET', '/v1/activity', { token }), (r) => r.body.calls?.length === n)

describe('response cap', () => {
  test('Content-Length over the cap → RESPONSE_TOO_LARGE before any byte of the body, refunded', async () => {
    const a = await t.signup()
    t.fake.handler = () => new Response('x'.repeat(CAP + 1), { headers: { 'content-type': 'text/plain' } })
    const r = await post(a.token)
    t.fake.handler = null
    expect(r.status).toBe(502)
    const body = (await r.json()) as Record<string, unknown>
    expect(body).toMatchObject({ error: 'RESPONSE_TOO_LARGE', cap: CAP, refunded: true, balance: 500 })
    expect(JSON.stringify(body)).not.toContain('xxxx')
    expect(await redisBalance(t, a.account_id)).toBe(500)
    expect((await activity(a.token)).body.calls[0]).toMatchObject({ slug: 'proxy:fake', outcome: 'too_large', refunded: true })
    await checkRedisInvariant(t, a.account_id)
  })

  test('a chunked body that crosses the cap is cut off, the upstream aborted, the debit refunded', async () => {
    const a = await t.signup()
    const log: string[] = []
    const gate = Promise.withResolvers<void>()
    // Past the cap the fake stalls instead of finishing, so only the proxy's abort can end it.
    t.fake.handler = () => new Response(chunkedBody(CAP * 4, log, { gate: gate.promise, stallAfter: CAP * 2 }), { headers: { 'content-type': 'text/plain' } })
    const r = await post(a.token)
    expect(r.status).toBe(200)
    let received = 0
    let cut = false
    try {
      for await (const chunk of r.body!) {
        received += chunk.byteLength
        gate.resolve()
      }
    } catch {
      cut = true
    }
    t.fake.handler = null
    expect(cut).toBe(true)
    expect(received).toBeGreaterThan(0)
    expect(received).toBeLessThanOrEqual(CAP)
    await eventually(async () => log, (l) => l.includes('cancelled'))
    expect(log).toEqual(['stalled', 'cancelled'])
    expect(await redisBalance(t, a.account_id)).toBe(500)
    expect((await activity(a.token)).body.calls[0]).toMatchObject({ outcome: 'too_large', refunded: true })
    await checkRedisInvariant(t, a.account_id)
  })

  test('a chunked body under the cap arrives whole and is charged', async () => {
    const a = await t.signup()
    const log: string[] = []
    t.fake.handler = () => new Response(chunkedBody(CAP - 16384, log), { headers: { 'content-type': 'text/plain' } })
    const r = await post(a.token)
    const body = await r.arrayBuffer()
    t.fake.handler = null
    expect(r.status).toBe(200)
    expect(body.byteLength).toBe(CAP - 16384)
    expect(log).toEqual(['completed'])
    expect(await redisBalance(t, a.account_id)).toBe(497)
  })

  test('an upstream that dies mid-body ends the stream and is refunded', async () => {
    const a = await t.signup()
    const gate = Promise.withResolvers<void>()
    let n = 0
    t.fake.handler = () =>
      new Response(
        new ReadableStream({
          async pull(c) {
            if (n++ === 0) return c.enqueue(new TextEncoder().encode('data: partial\n\n'))
            await Promise.race([gate.promise, Bun.sleep(5000)])
            c.error(new Error('upstream died'))
          },
        }),
        { headers: { 'content-type': 'text/event-stream' } },
      )
    const r = await post(a.token)
    expect(r.status).toBe(200)
    let text = ''
    let cut = false
    try {
      for await (const chunk of r.body!) {
        text += new TextDecoder().decode(chunk)
        gate.resolve()
      }
    } catch {
      cut = true
    }
    t.fake.handler = null
    expect(text).toBe('data: partial\n\n')
    expect(cut).toBe(true)
    expect(await eventually(() => redisBalance(t, a.account_id), (b) => b === 500)).toBe(500)
    expect((await activity(a.token)).body.calls[0]).toMatchObject({ outcome: 'provider_error', refunded: true })
  })

  test('an upstream that dies before the first byte → PROVIDER_ERROR, refunded', async () => {
    const a = await t.signup()
    t.fake.handler = () =>
      new Response(
        new ReadableStream({
          pull(c) {
            c.error(new Error('upstream died'))
          },
        }),
        { headers: { 'content-type': 'text/event-stream' } },
      )
    const r = await post(a.token)
    t.fake.handler = null
    expect(r.status).toBe(502)
    expect(await r.json()).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true, balance: 500 })
    expect(await redisBalance(t, a.account_id)).toBe(500)
  })
})

describe('client disconnect', () => {
  test('mid-stream: the upstream body is cancelled; the debit stands', async () => {
    const a = await t.signup()
    const log: string[] = []
    t.fake.handler = () => new Response(chunkedBody(CAP, log, { stallAfter: 16384 }), { headers: { 'content-type': 'text/event-stream' } })
    const ac = new AbortController()
    const r = await post(a.token, { signal: ac.signal })
    const reader = r.body!.getReader()
    await reader.read()
    await eventually(async () => log, (l) => l.includes('stalled'))
    ac.abort()
    await eventually(async () => log, (l) => l.includes('cancelled'))
    t.fake.handler = null
    expect(log).toEqual(['stalled', 'cancelled'])
    expect((await activity(a.token)).body.calls[0]).toMatchObject({ outcome: 'client_closed', refunded: false, charged: 3 })
    expect(await redisBalance(t, a.account_id)).toBe(497)
  })

  test('gone before the request left (during the key read): refunded as not_sent, the provider never asked', async () => {
    const a = await t.signup()
    const { reached, release, restore } = holdKeyRead(t)
    const seenBefore = t.fake.seen.length
    try {
      const ac = new AbortController()
      const pending = fetch(`${base}/proxy/fakebyok/v1/chat`, {
        method: 'POST',
        body: '{"never":"sent"}',
        headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
        signal: ac.signal,
      }).catch(() => 'aborted')
      await reached
      expect(await redisBalance(t, a.account_id)).toBe(498)
      ac.abort()
      expect(await pending).toBe('aborted')
      await Bun.sleep(50) // the service sees the client gone
      release()
      expect((await activity(a.token)).body.calls[0]).toMatchObject({ outcome: 'not_sent', refunded: true })
      expect(t.fake.seen.slice(seenBefore).filter((x) => x.body === '{"never":"sent"}')).toHaveLength(0)
      expect(await redisBalance(t, a.account_id)).toBe(500)
      await checkRedisInvariant(t, a.account_id)
    } finally {
      restore()
    }
  })

  test('before the provider answers: the upstream request is aborted', async () => {
    const a = await t.signup()
    const log: string[] = []
    const { promise: arrived, resolve } = Promise.withResolvers<void>()
    t.fake.handler = (req) => {
      req.signal.addEventListener('abort', () => log.push('upstream aborted'))
      resolve()
      return new Promise<Response>(() => {})
    }
    const ac = new AbortController()
    const pending = post(a.token, { signal: ac.signal }).catch(() => 'aborted')
    await arrived
    ac.abort()
    expect(await pending).toBe('aborted')
    await eventually(async () => log, (l) => l.length > 0)
    t.fake.handler = null
    expect(log).toEqual(['upstream aborted'])
    expect((await activity(a.token)).body.calls[0]).toMatchObject({ outcome: 'client_closed', refunded: false })
  })
})
