/**
 * Request bodies are piped, not buffered: the provider receives the first part of an upload while
 * the client is still holding back the rest. A response that reached the proxy whole (its end with
 * its first bytes) leaves with its bytes and length (src/paid-request/read-ahead.ts answers it whole: the
 * choice itself is tested in test/integration/read-ahead.test.ts); one still arriving is relayed as
 * it comes (proxy.sdk.happy.test.ts, the streamed completions).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Server, TCPSocketListener } from 'bun'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
let base: string
let upstream: Server<unknown>
let wholeUpstream: TCPSocketListener<{ got: string }>
/** A whole chunked SSE answer, written to the socket at once: status line, headers, body and end. */
const SSE_EVENTS = ['data: {"n":1}\n\n', 'data: {"n":2}\n\n', 'data: [DONE]\n\n']
const chunked = SSE_EVENTS.map((e) => `${Buffer.byteLength(e).toString(16)}\r\n${e}\r\n`).join('') + '0\r\n\r\n'
const WHOLE_SSE = `HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n${chunked}`
const events: string[] = []
let firstChunkArrived: () => void = () => {}

beforeAll(async () => {
  // A provider of our own, reading the body as it arrives (the shared fake buffers it first).
  upstream = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      let bytes = 0
      for await (const chunk of req.body!) {
        if (bytes === 0) {
          events.push('upstream:first-chunk')
          firstChunkArrived()
        }
        bytes += chunk.byteLength
      }
      events.push('upstream:end')
      return Response.json({ bytes })
    },
  })
  // A provider that answers each request (once its headers and declared body are in) with WHOLE_SSE in one write.
  wholeUpstream = Bun.listen<{ got: string }>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(socket) {
        socket.data = { got: '' }
      },
      data(socket, bytes) {
        socket.data.got += bytes.toString('latin1')
        const head = socket.data.got.indexOf('\r\n\r\n')
        if (head < 0) return
        const length = Number(/content-length: *(\d+)/i.exec(socket.data.got.slice(0, head))?.[1] ?? 0)
        if (socket.data.got.length < head + 4 + length) return
        socket.data.got = socket.data.got.slice(head + 4 + length)
        socket.write(WHOLE_SSE)
      },
    },
  })
  t = await startTestApp({
    catalog: () => ({
      providers: {
        up: { base_url: `http://127.0.0.1:${upstream.port}`, key_env: 'FAKE_HOUSE_KEY', auth: { header: 'authorization', scheme: 'Bearer' }, proxy: { price: 1, paths: ['/v1/'], house: { allow: ['/v1/'] } } },
        whole: { base_url: `http://127.0.0.1:${wholeUpstream.port}`, key_env: 'FAKE_HOUSE_KEY', auth: { header: 'authorization', scheme: 'Bearer' }, proxy: { price: 1, paths: ['/v1/'], house: { allow: ['/v1/'] } } },
      },
      capabilities: [],
    }),
  })
  base = await t.listen()
})
afterAll(async () => {
  await t.close()
  upstream.stop(true)
  wholeUpstream.stop(true)
})

describe('request body', () => {
  test('reaches the provider chunk by chunk while the client is still sending', async () => {
    const a = await t.signup()
    const arrived = new Promise<void>((resolve) => (firstChunkArrived = resolve))
    const enc = new TextEncoder()
    let step = 0
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        if (step++ === 0) return c.enqueue(enc.encode('{"part":"one",'))
        // Hold the rest back until the provider has the first part (or give up after 5 s).
        await Promise.race([arrived, Bun.sleep(5000)])
        events.push('client:rest-sent')
        c.enqueue(enc.encode('"rest":"two"}'))
        c.close()
      },
    })
    const r = await fetch(`${base}/proxy/up/v1/upload`, {
      method: 'POST',
      body,
      duplex: 'half',
      headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
    } as RequestInit)
    expect(r.status).toBe(200)
    expect(await r.json()).toEqual({ bytes: '{"part":"one","rest":"two"}'.length })
    expect(events).toEqual(['upstream:first-chunk', 'client:rest-sent', 'upstream:end'])
  })
})

describe('response body', () => {
  test('an SSE answer that reached the proxy whole leaves with the same bytes and their length, charged once', async () => {
    const a = await t.signup()
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${base}/proxy/whole/v1/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ stream: true }),
        headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
      })
      expect(r.status).toBe(200)
      expect(r.headers.get('content-type')).toBe('text/event-stream')
      const text = await r.text()
      expect(text).toBe(SSE_EVENTS.join(''))
      expect(r.headers.get('content-length')).toBe(String(Buffer.byteLength(text)))
    }
    expect((await t.req('GET', '/v1/balance', { token: a.token })).body.balance).toBe(497)
  })
})
