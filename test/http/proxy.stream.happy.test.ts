/**
 * Request bodies are piped, not buffered: the provider receives the first part of an upload while
 * the client is still holding back the rest.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Server } from 'bun'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
let base: string
let upstream: Server<unknown>
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
  t = await startTestApp({
    catalog: () => ({
      providers: { up: { base_url: `http://127.0.0.1:${upstream.port}`, key_env: 'FAKE_HOUSE_KEY', auth: { header: 'authorization', scheme: 'Bearer' }, proxy: { price: 1, paths: ['/v1/'] } } },
      capabilities: [],
    }),
  })
  base = await t.listen()
})
afterAll(async () => {
  await t.close()
  upstream.stop(true)
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
