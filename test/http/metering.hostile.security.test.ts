/**
 * Metered routes against a buggy or hostile upstream (docs/api.md §7; a provider base URL is the
 * catalog's, but what answers there is not ours to trust): whatever usage or framing it sends, a call
 * is charged at most its reservation, never a negative amount, its record reaches the ledger, and
 * the client reads exactly the stream it asked for.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { calls, ledgerEntries } from '../../src/db/schema/ledger'
import { SseMeter } from '../../src/metering/meter'
import { type LlmFake } from '../fakes/llm'
import type { TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'
import { startMeteredApp } from '../helpers/metering'
import { eventually } from '../helpers/proxy'

let t: TestApp
let base: string
let llm: LlmFake

beforeAll(async () => {
  ;({ t, llm, base } = await startMeteredApp())
})
afterAll(async () => {
  await t.close()
})

const chat = (token: string, body: Record<string, unknown>) =>
  fetch(`${base}/proxy/openai/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], ...body }),
  })
const settled = (token: string, id: string) =>
  eventually(
    () => t.req('GET', `/v1/activity/${id}`, { token }),
    (r) => r.status === 200,
    5000,
  )
const withFake = async <T>(handler: () => Response, f: () => Promise<T>) => {
  t.fake.handler = handler
  try {
    return await f()
  } finally {
    t.fake.handler = llm.handler
  }
}
/** A chat completion whose usage object is written as given (any JSON text). */
const answerWithUsage = (usage: string) => () =>
  new Response(`{"id":"c","object":"chat.completion","model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":${usage}}`, {
    headers: { 'content-type': 'application/json' },
  })

describe('token counts no provider could bill', () => {
  for (const [name, n] of [
    ['past 2^53', '1152921504606846976'],
    ['past a 32-bit column', '3000000000'],
    ['written as 1e300', '1e300'],
  ] as const) {
    test(`a usage of ${name} tokens: charged the reservation, and the call and its debit still reach Postgres`, async () => {
      const a = await t.signup()
      const r = await withFake(answerWithUsage(`{"prompt_tokens":${n},"completion_tokens":${n}}`), () => chat(a.token, { model: 'gpt-test', max_tokens: 100 }))
      expect(r.status).toBe(200)
      await r.text()
      const id = r.headers.get('x-pab-call-id')!
      const reserved = Number(r.headers.get('x-pab-reserved'))
      const d = await settled(a.token, id)
      expect(d.body).toMatchObject({ outcome: 'ok', usage_source: 'provider', charged: reserved })
      expect(d.body.uncharged).toBeGreaterThan(0)
      expect(Number.isSafeInteger(d.body.tokens.input) && Number.isSafeInteger(d.body.tokens.output)).toBe(true)
      await flushAll(t)
      const rows = await t.s.db.db.select().from(calls).where(eq(calls.callId, id))
      expect(rows).toHaveLength(1)
      expect(rows[0]!.uncharged).toBeGreaterThan(0)
      const debit = await t.s.db.db.select().from(ledgerEntries).where(eq(ledgerEntries.callId, id))
      expect(debit.map((e) => Number(e.amount))).toEqual([-reserved])
      expect((await t.req('GET', '/v1/balance', { token: a.token })).body.balance).toBe(500 - reserved)
    })
  }
})

/** A stream through the meter in chunks cut at `cuts` (every byte: 'each'), as the client reads it. */
function metered(kind: 'chat' | 'messages' | 'responses', strip: boolean, raw: string, cuts: 'whole' | 'each') {
  const b = Buffer.from(raw)
  const m = new SseMeter(kind, strip)
  const out: Uint8Array[] = []
  let from = 0
  for (const to of cuts === 'each' ? [...Array(b.byteLength).keys()].slice(1).concat(b.byteLength) : [b.byteLength]) {
    out.push(m.push(b.subarray(from, to)))
    from = to
  }
  out.push(m.flush())
  return { text: Buffer.concat(out).toString(), usage: m.usage() }
}

describe('SSE framing a provider may legally send', () => {
  const chunk = (text: string, nullUsage: boolean) =>
    `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"${text}"}}]${nullUsage ? ',"usage":null' : ''}}`
  const usage = 'data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5}}'
  for (const [name, eol] of [
    ['lone \\r', '\r'],
    ['\\r\\n', '\r\n'],
    ['\\n', '\n'],
  ] as const) {
    for (const cuts of ['whole', 'each'] as const) {
      test(`lines ended by ${name} (read ${cuts === 'whole' ? 'whole' : 'a byte at a time'}): the usage is read and what the proxy asked for stays hidden`, () => {
        const events = (nullUsage: boolean, withUsage: boolean) =>
          [chunk('a', nullUsage), `: keep-alive`, chunk('b', nullUsage), ...(withUsage ? [usage] : []), 'data: [DONE]'].map((e) => e + eol + eol).join('')
        const r = metered('chat', true, events(true, true), cuts)
        expect(r.usage).toEqual({ input: 10, cached: 0, output: 5 })
        expect(r.text).toBe(events(false, false))
      })
    }
  }
})

describe('an upstream that holds the call', () => {
  /**
   * The client leaves 200 ms in, while the proxy still waits on the upstream: the call is settled
   * within the drain's bound (shortened here) all the same, refunded (nothing was served).
   */
  const leaveWhileWaiting = async (token: string, url: string) => {
    const ctl = new AbortController()
    const pending = fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-test', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      signal: ctl.signal,
    }).catch(() => 'aborted')
    await Bun.sleep(200)
    expect((await t.req('GET', '/v1/balance', { token })).body.held).toBeGreaterThan(0)
    ctl.abort()
    expect(await pending).toBe('aborted')
    return eventually(
      () => t.req('GET', '/v1/balance', { token }),
      (r) => r.body.held === 0,
      3000,
    ).catch(() => null)
  }

  test('headers, then silence: once the client left, the call settles within the drain bound (refunded)', async () => {
    const { meteredDrain } = await import('../../src/paid-request/proxied')
    const was = meteredDrain.ms
    meteredDrain.ms = 300
    try {
      const a = await t.signup()
      const b = await withFake(
        () => new Response(new ReadableStream({ pull: () => new Promise(() => {}) }), { headers: { 'content-type': 'text/event-stream' } }),
        () => leaveWhileWaiting(a.token, `${base}/proxy/openai/v1/chat/completions`),
      )
      expect(b?.body).toMatchObject({ held: 0, balance: 500 })
    } finally {
      meteredDrain.ms = was
    }
  })

  test('header bytes trickled forever (no idle timeout ever fires): once the client left, the call settles within the drain bound', async () => {
    const { meteredDrain } = await import('../../src/paid-request/proxied')
    const was = meteredDrain.ms
    meteredDrain.ms = 300
    const timers: ReturnType<typeof setInterval>[] = []
    // A provider base URL that answers its status line, then one byte of a header every 20 ms.
    const server = Bun.listen({
      hostname: '127.0.0.1',
      port: 0,
      socket: {
        data(socket) {
          socket.write('HTTP/1.1 200 OK\r\nx-slow: ')
          timers.push(setInterval(() => socket.write('a'), 20))
        },
      },
    })
    const catalog = t.s.catalog.providers.get('openai')!
    const baseUrl = catalog.base_url
    ;(catalog as { base_url: string }).base_url = `http://127.0.0.1:${server.port}`
    try {
      const a = await t.signup()
      const b = await leaveWhileWaiting(a.token, `${base}/proxy/openai/v1/chat/completions`)
      expect(b?.body).toMatchObject({ held: 0, balance: 500 })
    } finally {
      ;(catalog as { base_url: string }).base_url = baseUrl
      meteredDrain.ms = was
      timers.forEach(clearInterval)
      server.stop(true)
    }
  })
})

describe("Anthropic's message_delta", () => {
  test("a delta field that is no number (a string, an object) keeps message_start's count, as a null one does", () => {
    const ev = (type: string, d: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...d })}\n\n`
    const start = ev('message_start', { message: { usage: { input_tokens: 5000, cache_read_input_tokens: 100, cache_creation_input_tokens: 40, output_tokens: 1 } } })
    const text = ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'x' } })
    for (const odd of ['5000', '', { n: 1 }, true, null]) {
      const raw = start + text + ev('message_delta', { usage: { input_tokens: odd, cache_read_input_tokens: odd, cache_creation_input_tokens: odd, output_tokens: 50 } }) + ev('message_stop', {})
      for (const cuts of ['whole', 'each'] as const) {
        const r = metered('messages', false, raw, cuts)
        expect(r.text).toBe(raw)
        expect(r.usage).toEqual({ input: 5000, cached: 100, output: 50, cache_write: 40 })
      }
    }
  })
})
