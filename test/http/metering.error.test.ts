/**
 * Metered routes when a request cannot be served as asked (docs/api.md §7): the clamp of an absent
 * ceiling on a low balance (the provider receives it), the 402 with affordable_max_tokens, a client
 * that leaves mid-stream (the upstream is drained and the provider's final usage charged), a provider
 * that dies mid-stream (an estimate, never above the reservation), an unpriced model (refused before
 * any upstream byte), model allowlists.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { openaiUsageFrames, type LlmFake } from '../fakes/llm'
import type { TestApp } from '../helpers/harness'
import { BIG, CLAUDE, costMicro, GPT, PIXELS, reservation, startMeteredApp } from '../helpers/metering'
import { readMeteredRequest } from '../../src/metering/request'
import shipped from '../../catalog.json'
import { IMAGE_TOKENS_BOUND, TOOLS_PROMPT_BOUND } from '../../src/metering/media'
import { eventually } from '../helpers/proxy'
import { vaultKey } from '../helpers/vault'
import { holdKeyRead } from '../helpers/key-read-hold'

let t: TestApp
let base: string
let llm: LlmFake

beforeAll(async () => {
  ;({ t, llm, base } = await startMeteredApp())
})
afterAll(async () => {
  await t.close()
})

const balance = async (token: string) => (await t.req('GET', '/v1/balance', { token })).body.balance as number
const chat = (token: string, body: Record<string, unknown>, signal?: AbortSignal) => {
  const raw = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], ...body })
  return {
    raw,
    res: fetch(`${base}/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: raw, signal }),
  }
}
const settled = (token: string, id: string) =>
  eventually(
    () => t.req('GET', `/v1/activity/${id}`, { token }),
    (r) => r.status === 200,
    5000,
  )

describe('the clamp and the 402', () => {
  test('no ceiling, max_output unaffordable: the largest affordable ceiling goes upstream and is reported', async () => {
    const a = await t.signup()
    llm.usage = { input: 10, cached: 0, output: 40 }
    const before = t.fake.seen.length
    const { raw, res } = chat(a.token, { model: 'gpt-big' })
    const r = await res
    expect(r.status).toBe(200)
    await r.json()
    const bytes = Buffer.byteLength(raw)
    const fits = Math.floor((499 * 1e6 - bytes * BIG.input) / BIG.output)
    expect(Number(r.headers.get('x-pab-max-tokens-clamped'))).toBe(fits)
    expect(Number(r.headers.get('x-pab-reserved'))).toBe(reservation(BIG, bytes, fits))
    expect(reservation(BIG, bytes, fits)).toBeLessThanOrEqual(500)
    expect(reservation(BIG, bytes, fits + 1)).toBeGreaterThan(500)
    expect(JSON.parse(t.fake.seen[before]!.body).max_completion_tokens).toBe(fits)
    const d = await settled(a.token, r.headers.get('x-pab-call-id')!)
    expect(d.body.charged).toBe(Math.floor(costMicro(BIG, llm.usage) / 1e6))
  })

  test('an explicit unaffordable ceiling: 402 with affordable_max_tokens, nothing sent upstream', async () => {
    const a = await t.signup()
    const before = t.fake.seen.length
    const { raw, res } = chat(a.token, { model: 'gpt-big', max_tokens: 32768 })
    const r = await res
    const body = (await r.json()) as any
    expect(r.status).toBe(402)
    expect(body.error).toBe('PAYMENT_REQUIRED')
    expect(body.affordable_max_tokens).toBe(Math.floor((499 * 1e6 - Buffer.byteLength(raw) * BIG.input) / BIG.output))
    expect(body.price).toBe(reservation(BIG, Buffer.byteLength(raw), 32768))
    expect(t.fake.seen.length).toBe(before)
    expect(await balance(a.token)).toBe(500)
  })

  test('fewer than min_output tokens affordable: 402 with affordable_max_tokens 0', async () => {
    const a = await t.signup()
    const r = await chat(a.token, { model: 'gpt-huge' }).res
    const body = (await r.json()) as any
    expect(body).toMatchObject({ error: 'PAYMENT_REQUIRED', affordable_max_tokens: 0 })
    expect(r.status).toBe(402)
  })
})

describe("a ceiling above the model's max_output", () => {
  // Each was reserved for the whole ceiling (a concurrent call starved meanwhile), while a larger
  // one answered 402 naming affordable_max_tokens: the model's own limit.
  const post = (token: string, path: string, body: Record<string, unknown>) =>
    fetch(`${base}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body) })
  const openaiChat = { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }
  const cases: [string, string, Record<string, unknown>, number][] = [
    ['/proxy/openai/v1/chat/completions', 'max_tokens', openaiChat, GPT.max_output],
    ['/proxy/openai/v1/chat/completions', 'max_completion_tokens', openaiChat, GPT.max_output],
    ['/proxy/openai/v1/responses', 'max_output_tokens', { model: 'gpt-test', input: 'hi' }, GPT.max_output],
    ['/proxy/anthropic/v1/messages', 'max_tokens', { model: 'claude-test', messages: [{ role: 'user', content: 'hi' }] }, CLAUDE.max_output],
  ]
  for (const [path, field, body, max] of cases) {
    test(`${path} ${field}: max_output + 1 → 400 BAD_REQUEST naming ${field} and the limit; nothing debited or sent`, async () => {
      const a = await t.signup()
      // Anthropic is the owner's own key here (the test catalog's byok provider).
      if (path.includes('anthropic')) await vaultKey(t, a.token, 'sk-ant-vaulted-key-0123456789-ABCD', 'anthropic')
      const before = t.fake.seen.length
      for (const over of [max + 1, max * 4]) {
        const r = await post(a.token, path, { ...body, [field]: over })
        expect(r.status).toBe(400)
        expect(await r.json()).toMatchObject({ error: 'BAD_REQUEST', field, expected: `≤ ${max} (the model's max_output)` })
      }
      expect(t.fake.seen.length).toBe(before)
      expect(await balance(a.token)).toBe(500)
      expect((await t.req('GET', '/v1/activity', { token: a.token })).body.calls).toEqual([])
      // The model's own limit is still served.
      const ok = await post(a.token, path, { ...body, [field]: max })
      expect(ok.status).toBe(200)
      await ok.text()
    })
  }

  test('a chat request naming both ceilings is refused when either passes the limit', async () => {
    const a = await t.signup()
    const r = await post(a.token, '/proxy/openai/v1/chat/completions', { ...openaiChat, max_tokens: 10, max_completion_tokens: GPT.max_output + 1 })
    expect(await r.json()).toMatchObject({ error: 'BAD_REQUEST', field: 'max_completion_tokens' })
  })

  test('the paid call of a metered capability is refused the same way', async () => {
    const a = await t.signup()
    const r = await t.req('POST', '/v1/call/llm.test.chat', { token: a.token, body: { ...openaiChat, max_tokens: GPT.max_output + 1 } })
    expect(r.status).toBe(400)
    expect(r.body).toMatchObject({ error: 'BAD_REQUEST', field: 'max_tokens', expected: `≤ ${GPT.max_output} (the model's max_output)` })
    expect(await balance(a.token)).toBe(500)
  })
})

describe('two ceilings', () => {
  test('a chat request naming both max_tokens and max_completion_tokens is reserved for the larger, whichever the provider obeys', async () => {
    const a = await t.signup()
    llm.usage = { input: 10, cached: 0, output: 5 }
    for (const body of [{ max_tokens: 3000, max_completion_tokens: 20 }, { max_tokens: 20, max_completion_tokens: 3000 }]) {
      const { raw, res } = chat(a.token, { model: 'gpt-big', ...body })
      const r = await res
      expect(r.status).toBe(200)
      await r.json()
      expect(Number(r.headers.get('x-pab-reserved'))).toBe(reservation(BIG, Buffer.byteLength(raw), 3000))
      expect(reservation(BIG, Buffer.byteLength(raw), 3000)).toBeGreaterThan(reservation(BIG, Buffer.byteLength(raw), 20))
    }
  })
})

describe('breaks', () => {
  test('the client leaves mid-stream: the upstream is read to its end and its final usage charged', async () => {
    const a = await t.signup()
    llm.usage = { input: 20, cached: 0, output: 1234 }
    llm.chunks = 20
    llm.frameDelayMs = 15
    llm.events = []
    const ctl = new AbortController()
    const r = await chat(a.token, { model: 'gpt-big', max_tokens: 2000, stream: true }, ctl.signal).res
    const reader = r.body!.getReader()
    await reader.read()
    ctl.abort()
    const id = r.headers.get('x-pab-call-id')!
    const d = await settled(a.token, id)
    llm.chunks = 5
    llm.frameDelayMs = 0
    expect(d.body).toMatchObject({ outcome: 'client_closed', usage_source: 'provider', tokens: { input: 20, cached: 0, output: 1234 } })
    expect(d.body.charged).toBe(Math.floor(costMicro(BIG, llm.usage) / 1e6))
    expect(await balance(a.token)).toBe(500 - d.body.charged)
  })

  test('the provider dies mid-stream: charged an estimate, never above the reservation', async () => {
    const a = await t.signup()
    llm.dieAfter = 4
    const { raw, res } = chat(a.token, { model: 'gpt-big', max_tokens: 2000, stream: true })
    const r = await res
    const reserved = Number(r.headers.get('x-pab-reserved'))
    let cut = false
    try {
      await r.text()
    } catch {
      cut = true
    }
    llm.dieAfter = null
    expect(cut).toBe(true)
    const d = await settled(a.token, r.headers.get('x-pab-call-id')!)
    expect(d.body).toMatchObject({ outcome: 'provider_cut', usage_source: 'estimated', reserved })
    expect(d.body.tokens.input).toBe(Buffer.byteLength(raw))
    expect(d.body.tokens.output).toBeGreaterThan(0)
    expect(d.body.charged).toBeGreaterThan(0)
    expect(d.body.charged).toBeLessThanOrEqual(reserved)
    expect(await balance(a.token)).toBe(500 - d.body.charged)
  })

  describe('a provider error streamed before any output', () => {
    const stream = (frames: string[]) => () => new Response(frames.join(''), { headers: { 'content-type': 'text/event-stream' } })
    const named = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
    const overloaded = named('error', { error: { type: 'overloaded_error', message: 'Overloaded' } })
    const start = named('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-test', content: [], usage: { input_tokens: 12, output_tokens: 1 } } })
    const delta = named('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Hel' } })
    const messages = async (token: string) => {
      const r = await fetch(`${base}/proxy/anthropic/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': token, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude-test', max_tokens: 200, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      })
      const text = await r.text()
      return { r, text, d: await settled(token, r.headers.get('x-pab-call-id')!) }
    }
    const withFake = async <T>(handler: () => Response, f: () => Promise<T>) => {
      t.fake.handler = handler
      try {
        return await f()
      } finally {
        t.fake.handler = llm.handler
      }
    }

    test("Anthropic's error event after message_start and a ping: the upstream failed before any output, refunded in full", async () => {
      const a = await t.signup()
      await vaultKey(t, a.token, 'sk-ant-vaulted-key-0123456789-ABCD', 'anthropic')
      const { r, text, d } = await withFake(stream([start, named('ping', {}), overloaded]), () => messages(a.token))
      expect(r.status).toBe(200)
      expect(text).toContain('overloaded_error') // the client sees the provider's error as sent
      expect(d.body).toMatchObject({ outcome: 'provider_error', charged: 0 })
      expect(await balance(a.token)).toBe(500)
    })

    test('an OpenAI chat stream that opens with an error chunk: refunded in full', async () => {
      const a = await t.signup()
      const err = `data: ${JSON.stringify({ error: { message: 'The server had an error while processing your request.', type: 'server_error' } })}\n\n`
      const r = await withFake(stream([err]), async () => {
        const res = await chat(a.token, { model: 'gpt-test', stream: true }).res
        await res.text()
        return res
      })
      const d = await settled(a.token, r.headers.get('x-pab-call-id')!)
      expect(d.body).toMatchObject({ outcome: 'provider_error', charged: 0 })
      expect(await balance(a.token)).toBe(500)
    })

    test("an error after output reached the client: the output was spent, charged an estimate (message_start's input, never above the reservation)", async () => {
      const a = await t.signup()
      await vaultKey(t, a.token, 'sk-ant-vaulted-key-0123456789-ABCD', 'anthropic')
      const { r, d } = await withFake(stream([start, delta, overloaded]), () => messages(a.token))
      expect(d.body).toMatchObject({ outcome: 'ok', usage_source: 'estimated' })
      // The input as message_start reported it, not the request's byte bound.
      expect(d.body.tokens).toMatchObject({ input: 12, cached: 0 })
      expect(d.body.charged).toBeGreaterThan(0)
      expect(d.body.charged).toBeLessThanOrEqual(Number(r.headers.get('x-pab-reserved')))
    })
  })

  test('the client leaves before the request went upstream (during the key read): refunded as not_sent, the provider never asked', async () => {
    const a = await t.signup()
    const { reached, release, restore } = holdKeyRead(t, 'sk-held-while-the-client-leaves')
    const seenBefore = t.fake.seen.length
    try {
      const ac = new AbortController()
      const pending = chat(a.token, { model: 'gpt-big', max_tokens: 2000, stream: true, messages: [{ role: 'user', content: 'never-sent' }] }, ac.signal).res.catch(() => 'aborted')
      await reached
      // The lane is read before the debit (docs/api.md §12), so nothing is reserved yet while it is held.
      expect(await balance(a.token)).toBe(500)
      ac.abort()
      expect(await pending).toBe('aborted')
      await Bun.sleep(50) // the service sees the client gone
      release()
      const act = await eventually(
        () => t.req('GET', '/v1/activity', { token: a.token }),
        (r) => r.body.calls?.[0]?.outcome !== undefined,
        5000,
      )
      expect(act.body.calls[0]).toMatchObject({ outcome: 'not_sent', refunded: true })
      expect(t.fake.seen.slice(seenBefore).filter((x) => x.body.includes('never-sent'))).toHaveLength(0)
      expect(await eventually(() => balance(a.token), (b) => b === 500)).toBe(500)
    } finally {
      restore()
    }
  })

  test('the provider fails before any output: refunded in full', async () => {
    const a = await t.signup()
    llm.dieAfter = 0
    const r = await chat(a.token, { model: 'gpt-big', max_tokens: 2000, stream: true }).res
    llm.dieAfter = null
    const body = (await r.json()) as any
    expect(r.status).toBe(502)
    expect(body).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true })
    expect(await eventually(() => balance(a.token), (b) => b === 500)).toBe(500)
  })
})

describe('an answer that declares its length', () => {
  test('a stream sent whole under a Content-Length, the usage chunk the proxy asked for taken out: the client is told the length it reads', async () => {
    const a = await t.signup()
    const usage = { input: 9, cached: 0, output: 33 }
    // One body of every frame: Bun declares its length (a streamed body goes chunked).
    t.fake.handler = () => new Response(openaiUsageFrames('gpt-test', 4, usage).join(''), { headers: { 'content-type': 'text/event-stream' } })
    try {
      const r = await chat(a.token, { model: 'gpt-test', stream: true }).res
      const text = await r.text()
      const told = r.headers.get('content-length')
      if (told !== null) expect(Number(told)).toBe(Buffer.byteLength(text))
      expect(text).not.toContain('"usage"')
      expect(text.endsWith('data: [DONE]\n\n')).toBe(true)
      const d = await settled(a.token, r.headers.get('x-pab-call-id')!)
      expect(d.body).toMatchObject({ outcome: 'ok', usage_source: 'provider', tokens: usage })
    } finally {
      t.fake.handler = llm.handler
    }
  })

  test('a plain answer that arrives whole is settled by the time the client has it', async () => {
    const a = await t.signup()
    llm.usage = { input: 12, cached: 0, output: 40 }
    const r = await chat(a.token, { model: 'gpt-test' }).res
    const body = (await r.json()) as { usage: unknown }
    expect(body.usage).toBeTruthy()
    expect(Number(r.headers.get('content-length'))).toBeGreaterThan(0)
    // No waiting: the settle came before the answer.
    const d = await t.req('GET', `/v1/activity/${r.headers.get('x-pab-call-id')}`, { token: a.token })
    expect(d.body).toMatchObject({ outcome: 'ok', usage_source: 'provider', tokens: llm.usage, charged: Math.floor(costMicro(GPT, llm.usage) / 1e6) })
    expect(await balance(a.token)).toBe(500 - d.body.charged)
  })
})

describe('what bytes cannot bound', () => {
  const image = (url: string) => ({ type: 'image_url', image_url: { url } })

  test('each image part adds IMAGE_TOKENS_BOUND to the input bound: a few URL bytes cannot reserve a fraction of what they cost', async () => {
    const a = await t.signup()
    llm.usage = { input: 10, cached: 0, output: 5 }
    const messages = [{ role: 'user', content: [{ type: 'text', text: 'what are these?' }, image('https://example.com/a.png'), image('data:image/png;base64,iVBORw0KGgo=')] }]
    const { raw, res } = chat(a.token, { model: 'gpt-test', max_completion_tokens: 100, messages })
    const r = await res
    expect(r.status).toBe(200)
    await r.json()
    expect(Number(r.headers.get('x-pab-reserved'))).toBe(reservation(GPT, Buffer.byteLength(raw) + 2 * IMAGE_TOKENS_BOUND, 100))
  })

  test("a model's own image bound (image_tokens) replaces IMAGE_TOKENS_BOUND for its image parts", async () => {
    const a = await t.signup()
    const messages = [{ role: 'user', content: [image('https://example.com/tall-768x2048.png')] }]
    const { raw, res } = chat(a.token, { model: 'gpt-pixels', max_completion_tokens: 100, messages })
    const r = await res
    expect(r.status).toBe(200)
    await r.json()
    expect(Number(r.headers.get('x-pab-reserved'))).toBe(reservation(PIXELS, Buffer.byteLength(raw) + PIXELS.image_tokens, 100))
  })

  test("the shipped catalog's image bounds cover the most one image costs: gpt-4o-mini's 2,833 + 8 tiles × 5,667", () => {
    const raw = JSON.stringify({ model: 'gpt-4o-mini', max_tokens: 16, messages: [{ role: 'user', content: [image('https://example.com/tall-768x2048.png')] }] })
    const r = readMeteredRequest(raw, (shipped as any).providers.openai.proxy.metered, 'chat')
    expect(r.inputBound).toBeGreaterThanOrEqual(2833 + 8 * 5667)
  })

  test('tools add TOOLS_PROMPT_BOUND to the input bound, for the prompt the provider adds for them', async () => {
    const a = await t.signup()
    llm.usage = { input: 10, cached: 0, output: 5 }
    // A parameter schema that says `"type": "file"` (OpenAPI 2) is a schema, not a file part.
    const tools = [{ type: 'function', function: { name: 'upload', parameters: { type: 'object', properties: { doc: { type: 'file' } } } } }]
    // A model priced high enough that the bound moves the reservation by whole credits.
    const { raw, res } = chat(a.token, { model: 'gpt-big', max_completion_tokens: 100, tools })
    const r = await res
    expect(r.status).toBe(200)
    await r.json()
    expect(Number(r.headers.get('x-pab-reserved'))).toBe(reservation(BIG, Buffer.byteLength(raw) + TOOLS_PROMPT_BOUND, 100))
    expect(reservation(BIG, Buffer.byteLength(raw) + TOOLS_PROMPT_BOUND, 100)).toBeGreaterThan(reservation(BIG, Buffer.byteLength(raw), 100))
  })

  test('a file, document or audio part, audio output, a server-side tool, the priority tier, a predicted output, or n past 1: BAD_REQUEST, no upstream request, nothing debited', async () => {
    const a = await t.signup()
    const before = t.fake.seen.length
    const file = [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-abc' } }] }]
    const audio = [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } }] }]
    const cases = [
      [{ model: 'gpt-test', messages: file }, 'messages'],
      [{ model: 'gpt-test', messages: audio }, 'messages'],
      [{ model: 'gpt-test', modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } }, 'modalities'],
      [{ model: 'gpt-test', n: 2 }, 'n'],
      [{ model: 'gpt-test', tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, 'tools'],
      [{ model: 'gpt-test', web_search_options: {} }, 'web_search_options'],
      [{ model: 'gpt-test', service_tier: 'priority' }, 'service_tier'],
      [{ model: 'gpt-test', prediction: { type: 'content', content: 'the file as it was' } }, 'prediction'],
    ] as const
    for (const [body, field] of cases) {
      const r = await chat(a.token, body).res
      expect(r.status).toBe(400)
      expect(await r.json()).toMatchObject({ error: 'BAD_REQUEST', field })
    }
    expect(t.fake.seen.length).toBe(before)
    expect(await balance(a.token)).toBe(500)
  })
})

describe('input the provider holds', () => {
  const post = (token: string, path: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    fetch(`${base}/proxy/${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })

  test('an earlier response, a conversation, a stored prompt or item, a background response, an earlier audio answer: BAD_REQUEST, no upstream request, nothing debited', async () => {
    const a = await t.signup()
    const before = t.fake.seen.length
    const responses = [
      [{ model: 'gpt-test', input: 'and then?', previous_response_id: 'resp_abc' }, 'previous_response_id'],
      [{ model: 'gpt-test', input: 'and then?', conversation: 'conv_abc' }, 'conversation'],
      [{ model: 'gpt-test', prompt: { id: 'pmpt_abc', version: '2' } }, 'prompt'],
      [{ model: 'gpt-test', input: 'write a novel', background: true }, 'background'],
      [{ model: 'gpt-test', input: [{ type: 'item_reference', id: 'msg_abc' }, { role: 'user', content: 'go on' }] }, 'input'],
    ] as const
    for (const [body, field] of responses) {
      const r = await post(a.token, 'openai/v1/responses', body)
      expect(r.status).toBe(400)
      expect(await r.json()).toMatchObject({ error: 'BAD_REQUEST', field })
    }
    const audioAnswer = [{ role: 'user', content: 'hi' }, { role: 'assistant', audio: { id: 'audio_abc' } }, { role: 'user', content: 'again' }]
    const r = await chat(a.token, { model: 'gpt-test', messages: audioAnswer }).res
    expect(r.status).toBe(400)
    expect(await r.json()).toMatchObject({ error: 'BAD_REQUEST', field: 'messages' })
    // Null fields are absent ones (SDKs send them): served.
    llm.usage = { input: 10, cached: 0, output: 5 }
    const ok = await post(a.token, 'openai/v1/responses', { model: 'gpt-test', input: 'hi', previous_response_id: null, background: false, max_output_tokens: 20 })
    expect(ok.status).toBe(200)
    await ok.text()
    expect(t.fake.seen.length).toBe(before + 1)
  })

  test("Anthropic's 1M-context beta (long-context prices the catalog does not hold): BAD_REQUEST on anthropic-beta; other betas pass", async () => {
    const a = await t.signup()
    const before = t.fake.seen.length
    const body = { model: 'claude-test', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }
    for (const beta of ['context-1m-2025-08-07', 'prompt-caching-2024-07-31, context-1m-2025-08-07']) {
      const r = await post(a.token, 'anthropic/v1/messages', body, { 'anthropic-beta': beta })
      expect(r.status).toBe(400)
      expect(await r.json()).toMatchObject({ error: 'BAD_REQUEST', field: 'anthropic-beta' })
    }
    expect(t.fake.seen.length).toBe(before)
    expect(await balance(a.token)).toBe(500)
    const other = await post(a.token, 'anthropic/v1/messages', body, { 'anthropic-beta': 'token-efficient-tools-2025-02-19' })
    expect(other.status).not.toBe(400)
    await other.text()
  })
})

describe('spellings of a metered route', () => {
  // An upstream that routes on the decoded path without a trailing slash, as many HTTP stacks do.
  const lenient = (req: Request, seen: { body: string }) => {
    const u = new URL(req.url)
    u.pathname = decodeURIComponent(u.pathname).replace(/\/+$/, '')
    return llm.handler(new Request(u.toString(), req), seen)
  }

  for (const path of ['/v1/chat/complet%69ons', '/v1/chat/completions/', '/v1/chat/%63ompletions/'])
    test(`${path} is the chat route to an upstream that decodes it: metered (reserved, then charged its usage), not flat`, async () => {
      const a = await t.signup()
      llm.usage = { input: 10, cached: 0, output: 300 }
      t.fake.handler = lenient
      try {
        const r = await fetch(`${base}/proxy/openai${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }),
        })
        expect(await r.text()).toContain('chat.completion')
        expect(t.fake.seen.at(-1)!.path).toBe(path) // forwarded as sent
        expect(r.headers.get('x-pab-charged')).toBeNull()
        expect(r.headers.get('x-pab-reserved')).not.toBeNull()
        const d = await settled(a.token, r.headers.get('x-pab-call-id')!)
        expect(d.body).toMatchObject({ usage_source: 'provider', tokens: llm.usage, charged: Math.floor(costMicro(GPT, llm.usage) / 1e6) })
      } finally {
        t.fake.handler = llm.handler
      }
    })
})

describe('models', () => {
  test('a killed agent sending a body the metered route refuses hears AGENT_KILLED: the admission its debit would make comes first', async () => {
    const a = await t.signup()
    const ag = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'gone' } })
    await t.req('POST', `/v1/agents/${ag.body.id}/kill`, { token: a.token })
    const r = await (await chat(ag.body.token, { model: 'no-such-model' }).res).json()
    expect(r).toMatchObject({ error: 'AGENT_KILLED' })
  })

  test('an unpriced model: BAD_REQUEST on model, no upstream request, nothing debited', async () => {
    const a = await t.signup()
    const before = t.fake.seen.length
    const r = await chat(a.token, { model: 'gpt-unknown' }).res
    const body = (await r.json()) as any
    expect(r.status).toBe(400)
    expect(body).toMatchObject({ error: 'BAD_REQUEST', field: 'model' })
    expect(body.expected).toContain('/llms-full.txt')
    expect(body.expected).toContain('GET /v1/search')
    expect(t.fake.seen.length).toBe(before)
    expect(await balance(a.token)).toBe(500)
  })

  test('proxy:openai/<glob> admits only those models; proxy:openai admits all', async () => {
    const a = await t.signup()
    const mk = async (allowlist: string[]) => {
      const r = await t.req('POST', '/v1/agents', { token: a.token, body: { name: `ag-${allowlist.join('-')}`.replace(/[^a-z0-9-]/gi, ''), allowlist } })
      expect(r.status).toBe(201)
      return r.body.token as string
    }
    const narrow = await mk(['proxy:openai/gpt-test*'])
    const wide = await mk(['proxy:openai'])
    const ok = await chat(narrow, { model: 'gpt-test-mini', max_tokens: 20 }).res
    expect(ok.status).toBe(200)
    await ok.text()
    const denied = await chat(narrow, { model: 'gpt-big', max_tokens: 20 }).res
    expect(denied.status).toBe(403)
    expect(((await denied.json()) as any).rule).toBe('agent_allowlist')
    const wideOk = await chat(wide, { model: 'gpt-big', max_tokens: 20 }).res
    expect(wideOk.status).toBe(200)
    await wideOk.text()
  })
})
