/**
 * The cost in the answer (docs/api.md §7): wherever a metered answer hands the client a `usage`
 * object — a JSON body, OpenAI chat's usage chunk, the Responses API's `response.completed`,
 * Anthropic's `message_delta` — that object gains `cost` (USD, micro-credits / 1e6 /
 * CREDITS_PER_USD) and `cost_details.credits` (the exact credits, 6 places): the figure the settle
 * charges from. Read with the official SDKs, which still parse every answer; the rest of each body
 * is the provider's, byte for byte; a first call (remainder 0) is charged the cost's whole credits.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { anthropicFrames, anthropicMessage, openaiCompletion, openaiFrames, openaiUsageFrames, responsesAnswer, responsesFrames, type FakeUsage, type LlmFake } from '../fakes/llm'
import type { TestApp } from '../helpers/harness'
import { CLAUDE, costMicro, EMBED, GPT, startMeteredApp, type Price } from '../helpers/metering'
import { eventually } from '../helpers/proxy'
import { vaultKey } from '../helpers/vault'
import { callTool, mcpClient } from '../helpers/mcp'

/** Not the default, so that the answer is seen to read the setting. */
const CREDITS_PER_USD = 250

let t: TestApp
let base: string
let llm: LlmFake

beforeAll(async () => {
  ;({ t, llm, base } = await startMeteredApp({ CREDITS_PER_USD: String(CREDITS_PER_USD) }))
})
afterAll(async () => {
  await t.close()
})

/** §7's figures, written independently of the service: the USD number and the 6-place credits. */
const expected = (p: Price, u: FakeUsage) => {
  const micro = costMicro(p, u)
  return { micro, cost: micro / 1e6 / CREDITS_PER_USD, credits: `${Math.floor(micro / 1e6)}.${String(micro % 1e6).padStart(6, '0')}` }
}
const usage = { input: 12000, cached: 3000, output: 2500 }
const claudeUsage = { input: 900, cached: 2000, output: 130, cache_write: 700, cache_write_1h: 300 }
const content = 'x'.repeat(16000)
const msgs = [{ role: 'user' as const, content }]
const claudeBody = { model: 'claude-test', max_tokens: 200, messages: [{ role: 'user' as const, content: 'x'.repeat(6000) }] }

const openai = (token: string) => new OpenAI({ baseURL: `${base}/proxy/openai/v1`, apiKey: token, maxRetries: 0 })
const anthropic = (token: string) => new Anthropic({ baseURL: `${base}/proxy/anthropic`, apiKey: token, maxRetries: 0 })
const detail = (token: string, id: string) =>
  eventually(
    () => t.req('GET', `/v1/activity/${id}`, { token }),
    (r) => r.status === 200,
  )
/** A raw POST through the proxy: the bytes the client reads. */
const raw = (token: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}/proxy${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })

/** The usage object with §7's two members appended (the provider's members first, as written). */
const withCost = (u: Record<string, unknown>, e: ReturnType<typeof expected>) => ({ ...u, cost: e.cost, cost_details: { credits: e.credits } })

/** The first call of a fresh account (remainder 0) is charged the cost's whole credits, and that figure is the activity's. */
async function chargedWholeCredits(token: string, callId: string, e: ReturnType<typeof expected>) {
  const d = await detail(token, callId)
  expect(d.body.charged).toBe(Math.floor(e.micro / 1e6))
  expect(d.body.charged).toBe(Math.floor(Number(e.credits)))
  expect(d.body.usage_source).toBe('provider')
}

describe('OpenAI chat completions', () => {
  test('a JSON answer: usage.cost and cost_details.credits, read by the SDK; charged from the same figure', async () => {
    const a = await t.signup()
    llm.usage = usage
    const e = expected(GPT, usage)
    const { data, response } = await openai(a.token).chat.completions.create({ model: 'gpt-test', max_tokens: 1000, messages: msgs }).withResponse()
    const u = data.usage as unknown as Record<string, any>
    expect(u.prompt_tokens).toBe(15000)
    expect(u.cost).toBe(e.cost)
    expect(u.cost_details).toEqual({ credits: e.credits })
    expect(e.credits).toBe('3.525000')
    await chargedWholeCredits(a.token, response.headers.get('x-pab-call-id')!, e)
  })

  test('the body is the provider\'s byte for byte but for the two members in its usage object', async () => {
    const a = await t.signup()
    llm.usage = usage
    const e = expected(GPT, usage)
    const res = await raw(a.token, '/openai/v1/chat/completions', { model: 'gpt-test', max_tokens: 1000, messages: msgs })
    const provider = openaiCompletion('gpt-test', 'w0 w1 w2 w3 w4 ', usage) as Record<string, any>
    const text = await res.text()
    expect(text).toBe(JSON.stringify({ ...provider, usage: withCost(provider.usage, e) }))
    // The body grew: the provider's Content-Length is not passed on as if it were the body's.
    expect(Number(res.headers.get('content-length') ?? Buffer.byteLength(text))).toBe(Buffer.byteLength(text))
  })

  test('a stream that asked for the usage: its usage chunk carries the cost; every other chunk as sent', async () => {
    const a = await t.signup()
    llm.usage = usage
    const e = expected(GPT, usage)
    const stream = await openai(a.token)
      .chat.completions.create({ model: 'gpt-test', max_tokens: 1000, messages: msgs, stream: true, stream_options: { include_usage: true } })
      .withResponse()
    let last: Record<string, any> | null = null
    for await (const chunk of stream.data) if (chunk.usage) last = chunk.usage as unknown as Record<string, any>
    expect(last).toMatchObject({ prompt_tokens: 15000, completion_tokens: 2500, cost: e.cost, cost_details: { credits: e.credits } })
    await chargedWholeCredits(a.token, stream.response.headers.get('x-pab-call-id')!, e)

    const res = await raw(a.token, '/openai/v1/chat/completions', { model: 'gpt-test', max_tokens: 1000, messages: msgs, stream: true, stream_options: { include_usage: true } })
    const frames = openaiUsageFrames('gpt-test', 5, usage)
    const usageFrame = frames.at(-2)!
    const o = JSON.parse(usageFrame.slice(6))
    const want = [...frames.slice(0, -2), `data: ${JSON.stringify({ ...o, usage: withCost(o.usage, e) })}\n\n`, frames.at(-1)].join('')
    expect(await res.text()).toBe(want)
  })

  test('a stream that did not ask for the usage gets none, and no cost: the provider\'s stream exactly', async () => {
    const a = await t.signup()
    llm.usage = usage
    const res = await raw(a.token, '/openai/v1/chat/completions', { model: 'gpt-test', max_tokens: 1000, messages: msgs, stream: true })
    const text = await res.text()
    expect(text).toBe(openaiFrames('gpt-test', 5).join(''))
    expect(text).not.toContain('cost')
  })
})

describe('OpenAI Responses API and embeddings', () => {
  test('a Responses JSON answer and a stream\'s response.completed carry the cost', async () => {
    const a = await t.signup()
    llm.usage = usage
    const e = expected(GPT, usage)
    const { data, response } = await openai(a.token).responses.create({ model: 'gpt-test', input: content, max_output_tokens: 3000 }).withResponse()
    expect(data.usage).toMatchObject({ output_tokens: 2500, cost: e.cost, cost_details: { credits: e.credits } })
    await chargedWholeCredits(a.token, response.headers.get('x-pab-call-id')!, e)

    const b = await t.signup()
    const s = await openai(b.token).responses.create({ model: 'gpt-test', input: content, max_output_tokens: 3000, stream: true }).withResponse()
    let completed: Record<string, any> | null = null
    for await (const ev of s.data) if (ev.type === 'response.completed') completed = ev.response.usage as unknown as Record<string, any>
    expect(completed).toMatchObject({ output_tokens: 2500, cost: e.cost, cost_details: { credits: e.credits } })
    await chargedWholeCredits(b.token, s.response.headers.get('x-pab-call-id')!, e)
  })

  test('the Responses bodies are the provider\'s but for the usage object\'s two members', async () => {
    const a = await t.signup()
    llm.usage = usage
    const e = expected(GPT, usage)
    const plain = await raw(a.token, '/openai/v1/responses', { model: 'gpt-test', input: content, max_output_tokens: 3000 })
    const r = responsesAnswer('gpt-test', 'w0 w1 w2 w3 w4 ', usage) as Record<string, any>
    expect(await plain.text()).toBe(JSON.stringify({ ...r, usage: withCost(r.usage, e) }))

    const streamed = await raw(a.token, '/openai/v1/responses', { model: 'gpt-test', input: content, max_output_tokens: 3000, stream: true })
    const frames = responsesFrames('gpt-test', 5, usage)
    const done = JSON.parse(frames.at(-1)!.split('\ndata: ')[1]!)
    const want = [...frames.slice(0, -1), `event: response.completed\ndata: ${JSON.stringify({ ...done, response: { ...done.response, usage: withCost(done.response.usage, e) } })}\n\n`].join('')
    expect(await streamed.text()).toBe(want)
  })

  test('embeddings: usage.cost read by the SDK', async () => {
    const a = await t.signup()
    llm.usage = { input: 60_000, cached: 0, output: 0 }
    const e = expected(EMBED, llm.usage)
    const { data, response } = await openai(a.token).embeddings.create({ model: 'embed-test', input: 'y'.repeat(70_000) }).withResponse()
    expect(data.usage).toMatchObject({ prompt_tokens: 60_000, cost: e.cost, cost_details: { credits: '1.200000' } })
    expect(e.credits).toBe('1.200000')
    await chargedWholeCredits(a.token, response.headers.get('x-pab-call-id')!, e)
  })
})

describe('Anthropic messages', () => {
  test('a JSON answer (cache reads and both cache writes priced): usage.cost read by the SDK; charged from the same figure', async () => {
    const a = await t.signup()
    await vaultKey(t, a.token, 'sk-ant-vaulted-key-0123456789-ABCD', 'anthropic')
    llm.usage = claudeUsage
    const e = expected(CLAUDE, claudeUsage)
    const { data, response } = await anthropic(a.token).messages.create(claudeBody).withResponse()
    expect(data.usage).toMatchObject({ output_tokens: 130, cost: e.cost, cost_details: { credits: e.credits } })
    await chargedWholeCredits(a.token, response.headers.get('x-pab-call-id')!, e)
    const bytes = await raw(a.token, '/anthropic/v1/messages', claudeBody)
    const m = anthropicMessage('claude-test', 'w0 w1 w2 w3 w4 ', claudeUsage) as Record<string, any>
    expect(await bytes.text()).toBe(JSON.stringify({ ...m, usage: withCost(m.usage, e) }))
  })

  test('a stream: message_delta carries the cost of the whole usage (message_start\'s input with the delta\'s output)', async () => {
    const a = await t.signup()
    await vaultKey(t, a.token, 'sk-ant-vaulted-key-0123456789-ABCD', 'anthropic')
    llm.usage = claudeUsage
    const e = expected(CLAUDE, claudeUsage)
    const stream = anthropic(a.token).messages.stream(claudeBody)
    let delta: Record<string, any> | null = null
    stream.on('streamEvent', (ev) => {
      if (ev.type === 'message_delta') delta = ev.usage as unknown as Record<string, any>
    })
    const final = await stream.finalMessage()
    // The SDK still parses the stream; its accumulated message copies the counts it knows.
    expect(final.usage.output_tokens).toBe(130)
    expect(delta).toMatchObject({ output_tokens: 130, cost: e.cost, cost_details: { credits: e.credits } })
    const { response } = await stream.withResponse()
    await chargedWholeCredits(a.token, response.headers.get('x-pab-call-id')!, e)

    const bytes = await raw(a.token, '/anthropic/v1/messages', { ...claudeBody, stream: true })
    const frames = anthropicFrames('claude-test', 5, claudeUsage)
    const last = frames.at(-1)!
    const deltaEvent = last.split('\n\n').find((x) => x.startsWith('event: message_delta'))!
    const o = JSON.parse(deltaEvent.split('\ndata: ')[1]!)
    const want = [...frames.slice(0, -1), last.replace(deltaEvent, `event: message_delta\ndata: ${JSON.stringify({ ...o, usage: withCost(o.usage, e) })}`)].join('')
    expect(await bytes.text()).toBe(want)
  })
})

describe('a metered capability', () => {
  test('POST /v1/call and its MCP tool carry the settled usage and its cost', async () => {
    const a = await t.signup()
    llm.usage = usage
    const e = expected(GPT, usage)
    const want = { input: 12000, cached: 0 + 3000, output: 2500, source: 'provider', cost: e.cost, cost_details: { credits: e.credits } }
    const r = await t.req('POST', '/v1/call/llm.test.chat', { token: a.token, body: { model: 'gpt-test', max_tokens: 100, messages: msgs } })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ charged: 3, usage: want })
    // The provider's answer in `result` as it wrote it.
    expect(r.body.result.usage).not.toHaveProperty('cost')
    const d = await detail(a.token, r.body.call_id)
    expect(d.body.charged).toBe(Math.floor(Number(e.credits)))

    const client = await mcpClient(base, a.token)
    try {
      for (const [name, args] of [
        ['llm_test_chat', { model: 'gpt-test', max_tokens: 100, messages: msgs }],
        ['call_capability', { slug: 'llm.test.chat', params: { model: 'gpt-test', max_tokens: 100, messages: msgs } }],
      ] as const) {
        const out = await callTool(client, name, args as Record<string, unknown>)
        expect(out.isError).toBe(false)
        expect(out.json).toMatchObject({ usage: want })
        expect(out.structured).toMatchObject({ usage: want })
      }
    } finally {
      await client.close()
    }
  })
})

describe('the response cap and the key scrubber', () => {
  test('an answer of exactly the cap passes with the cost (the cap counts the provider\'s bytes); a key it echoes is masked, the cost written after it', async () => {
    const { OPENAI_HOUSE_KEY } = await import('../helpers/proxy')
    const body = (pad: string) =>
      `{"id":"c","object":"chat.completion","model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"${pad}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":15000,"completion_tokens":2500,"prompt_tokens_details":{"cached_tokens":3000},"echo":"${OPENAI_HOUSE_KEY}"}}`
    const CAP = 4096
    const exact = body('p'.repeat(CAP - Buffer.byteLength(body(''))))
    expect(Buffer.byteLength(exact)).toBe(CAP)
    const capped = await startMeteredApp({ CREDITS_PER_USD: String(CREDITS_PER_USD), PROXY_MAX_RESPONSE_BYTES: String(CAP) })
    try {
      capped.t.fake.handler = () => new Response(exact, { headers: { 'content-type': 'application/json' } })
      const a = await capped.t.signup()
      const e = expected(GPT, usage)
      const res = await fetch(`${capped.base}/proxy/openai/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-test', max_tokens: 1000, messages: msgs }),
      })
      expect(res.status).toBe(200)
      const text = await res.text()
      const mask = '*'.repeat(OPENAI_HOUSE_KEY.length)
      expect(text).toBe(exact.replace(OPENAI_HOUSE_KEY, mask).slice(0, -2) + `,"cost":${JSON.stringify(e.cost)},"cost_details":{"credits":"${e.credits}"}}}`)
      expect(Buffer.byteLength(text)).toBeGreaterThan(CAP)
      // One byte past the cap is refused as before, and refunded.
      capped.t.fake.handler = () => new Response(exact + ' ', { headers: { 'content-type': 'application/json' } })
      const over = await fetch(`${capped.base}/proxy/openai/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-test', max_tokens: 1000, messages: msgs }),
      })
      expect(over.status).toBe(502)
      expect(((await over.json()) as { error: string }).error).toBe('RESPONSE_TOO_LARGE')
    } finally {
      await capped.t.close()
    }
  }, 30_000)
})
