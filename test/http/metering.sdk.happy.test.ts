/**
 * Metered LLM routes with the official SDKs (docs/api.md §7): each call is charged exactly
 * floor((r + cost) / 1e6) with the micro-credit remainder carried across calls, the reservation is
 * shown in x-pab-reserved, the usage chunk the proxy asked for never reaches a client that did not
 * ask for it, and GET /v1/activity/{call_id} shows model, tokens, reserved and charged.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { openaiFrames, type LlmFake } from '../fakes/llm'
import type { TestApp } from '../helpers/harness'
import { chargesOf, CLAUDE, costMicro, EMBED, GPT, reservation, startMeteredApp } from '../helpers/metering'
import { eventually } from '../helpers/proxy'
import { vaultKey } from '../helpers/vault'
import { flushAll } from '../helpers/ledger'

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
const detail = (token: string, id: string) =>
  eventually(
    () => t.req('GET', `/v1/activity/${id}`, { token }),
    (r) => r.status === 200,
  )
const openai = (token: string) => new OpenAI({ baseURL: `${base}/proxy/openai/v1`, apiKey: token, maxRetries: 0 })
const usage = { input: 12000, cached: 3000, output: 2500 }

/** A chat stream read through the SDK, as a client that did not ask for the usage: its chunks and its text. */
async function chatStream(token: string) {
  const stream = await openai(token).chat.completions.create({ model: 'gpt-test', max_tokens: 1000, messages: msgs, stream: true })
  let text = ''
  const chunks: unknown[] = []
  for await (const chunk of stream) {
    chunks.push(chunk)
    text += chunk.choices[0]?.delta.content ?? ''
  }
  return { text, chunks }
}
// The input bound is the body's byte length: a prompt as long as the tokens the fake reports.
const content = 'x'.repeat(16000)
const msgs = [{ role: 'user' as const, content }]

describe('OpenAI SDK, metered', () => {
  test('chat completions: charged exactly, the remainder carried to the next call', async () => {
    const a = await t.signup()
    llm.usage = usage
    const client = openai(a.token)
    const { data, response } = await client.chat.completions.create({ model: 'gpt-test', max_tokens: 1000, messages: msgs }).withResponse()
    expect(data.usage?.prompt_tokens).toBe(15000)
    expect(response.headers.get('x-pab-charged')).toBeNull()
    const reserved = Number(response.headers.get('x-pab-reserved'))
    expect(reserved).toBeGreaterThan(1)
    await client.chat.completions.create({ model: 'gpt-test', max_tokens: 1000, messages: msgs })
    await client.chat.completions.create({ model: 'gpt-test', max_tokens: 1000, messages: msgs })
    const c = costMicro(GPT, usage)
    const { charged } = chargesOf([c, c, c])
    expect(charged).toEqual([3, 4, 3])
    expect(await eventually(() => balance(a.token), (b) => b === 500 - 10)).toBe(490)
    const d = await detail(a.token, response.headers.get('x-pab-call-id')!)
    expect(d.body).toMatchObject({ route: 'proxy:openai', model: 'gpt-test', tokens: { input: 12000, cached: 3000, output: 2500 }, reserved, charged: 3, uncharged: 0, usage_source: 'provider', outcome: 'ok', http_status: 200 })
    const act = await t.req('GET', '/v1/activity', { token: a.token })
    expect(act.body.calls[0]).toMatchObject({ slug: 'proxy:openai', model: 'gpt-test', tokens: { input: 12000, cached: 3000, output: 2500 } })
  })

  test('a chat stream: usage asked for upstream, the client sees no usage chunk nor usage field', async () => {
    const a = await t.signup()
    llm.usage = usage
    const before = t.fake.seen.length
    const { text, chunks } = await chatStream(a.token)
    expect(text).toBe('w0 w1 w2 w3 w4 ')
    expect(JSON.parse(t.fake.seen[before]!.body).stream_options).toEqual({ include_usage: true })
    for (const c of chunks) expect(c).not.toHaveProperty('usage')
    // The rest of each chunk as the provider sent it: its padding kept.
    for (const c of chunks) expect(c).toHaveProperty('obfuscation')
    expect(chunks.every((c: any) => c.choices.length === 1)).toBe(true)
    expect(await eventually(() => balance(a.token), (b) => b === 497)).toBe(497)
  })

  test('a long chat stream arriving in one read (stripped in place): the client sees no usage, every word, and the call is charged exactly', async () => {
    const a = await t.signup()
    llm.usage = usage
    llm.chunks = 80
    llm.oneWrite = true
    try {
      const { text, chunks } = await chatStream(a.token)
      expect(text).toBe(Array.from({ length: 80 }, (_, i) => `w${i} `).join(''))
      for (const c of chunks) expect(c).not.toHaveProperty('usage')
      for (const c of chunks) expect(c).toHaveProperty('obfuscation')
      const once = chargesOf([costMicro(GPT, usage)]).charged[0]!
      expect(await eventually(() => balance(a.token), (b) => b === 500 - once)).toBe(500 - once)
      // Byte for byte, the stream the provider sends a client that did not ask for the usage.
      const raw = await fetch(`${base}/proxy/openai/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-test', max_tokens: 1000, messages: msgs, stream: true }),
      })
      expect(await raw.text()).toBe(openaiFrames('gpt-test', 80).join(''))
    } finally {
      llm.chunks = 5
      llm.oneWrite = false
    }
  })

  test('a chat stream that asked for usage itself gets the usage chunk, charged the same', async () => {
    const a = await t.signup()
    llm.usage = usage
    const stream = await openai(a.token).chat.completions.create({
      model: 'gpt-test',
      max_tokens: 1000,
      messages: msgs,
      stream: true,
      stream_options: { include_usage: true },
    })
    let seen: any = null
    for await (const chunk of stream) if (chunk.usage) seen = chunk.usage
    expect(seen).toMatchObject({ prompt_tokens: 15000, completion_tokens: 2500 })
    expect(await eventually(() => balance(a.token), (b) => b === 497)).toBe(497)
  })

  test('Responses API, plain and streamed; embeddings', async () => {
    const a = await t.signup()
    llm.usage = usage
    const client = openai(a.token)
    const r = await client.responses.create({ model: 'gpt-test', input: content, max_output_tokens: 3000 })
    expect(r.usage?.output_tokens).toBe(2500)
    const s = await client.responses.create({ model: 'gpt-test', input: content, max_output_tokens: 3000, stream: true })
    let done = false
    for await (const ev of s) if (ev.type === 'response.completed') done = true
    expect(done).toBe(true)
    const e = await client.embeddings.create({ model: 'embed-test', input: content })
    expect(e.data).toHaveLength(1)
    const c = costMicro(GPT, usage)
    const costs = [c, c, costMicro(EMBED, { input: usage.input, cached: 0, output: 0 })]
    const { charged } = chargesOf(costs)
    const want = 500 - charged.reduce((x, y) => x + y, 0)
    expect(await eventually(() => balance(a.token), (b) => b === want)).toBe(want)
  })
})

describe('Anthropic SDK, metered', () => {
  test('messages, plain and streamed (message_start + message_delta usage), charged exactly', async () => {
    const a = await t.signup()
    await vaultKey(t, a.token, 'sk-ant-vaulted-key-0123456789-ABCD', 'anthropic')
    llm.usage = { input: 900, cached: 2000, output: 130 }
    const client = new Anthropic({ baseURL: `${base}/proxy/anthropic`, apiKey: a.token, maxRetries: 0 })
    const m = await client.messages.create({ model: 'claude-test', max_tokens: 200, messages: [{ role: 'user', content: 'x'.repeat(3000) }] })
    expect(m.usage.output_tokens).toBe(130)
    const final = await client.messages.stream({ model: 'claude-test', max_tokens: 200, messages: [{ role: 'user', content: 'x'.repeat(3000) }] }).finalMessage()
    expect(final.usage.output_tokens).toBe(130)
    const c = costMicro(CLAUDE, llm.usage)
    const { charged } = chargesOf([c, c])
    expect(charged).toEqual([5, 5])
    expect(await eventually(() => balance(a.token), (b) => b === 500 - 10)).toBe(490)
  })
})

describe('Anthropic prompt caching, metered', () => {
  /**
   * Anthropic bills a cache write above input (1.25× for the 5-minute lifetime, 2× for the 1-hour
   * one) and a cache read below it: each is charged at its own catalog price, read from the usage's
   * `cache_creation_input_tokens` and its `cache_creation` split, plain and streamed.
   */
  test('cache writes are charged at their own prices; the activity and, after the flush, the ledger show them', async () => {
    const a = await t.signup()
    await vaultKey(t, a.token, 'sk-ant-vaulted-key-0123456789-ABCD', 'anthropic')
    llm.usage = { input: 40, cached: 1000, output: 120, cache_write: 20_000, cache_write_1h: 9000 }
    const tokens = { input: 40, cached: 1000, output: 120, cache_write: 20_000, cache_write_1h: 9000 }
    const client = new Anthropic({ baseURL: `${base}/proxy/anthropic`, apiKey: a.token, maxRetries: 0 })
    // A prompt of 40,000 bytes: enough for the 30,040 input tokens the usage reports (a token is at least a byte).
    const body = { model: 'claude-test', max_tokens: 200, messages: [{ role: 'user' as const, content: 'y'.repeat(40_000) }] }
    const plain = await client.messages.create(body).withResponse()
    const streamed = await client.messages.stream(body).withResponse()
    await streamed.data.finalMessage()
    // 40 × 3000 + 1000 × 300 + 120 × 15000 + 20000 × 3750 + 9000 × 6000 = 131,220,000 micro-credits:
    // 131 credits, where the same usage priced as input would be 3 × 29,000 = 87 + 2.22: 89.
    const c = costMicro(CLAUDE, tokens)
    expect(c).toBe(131_220_000)
    const { charged } = chargesOf([c, c])
    expect(charged).toEqual([131, 131])
    for (const [i, id] of [plain.response.headers.get('x-pab-call-id')!, streamed.response.headers.get('x-pab-call-id')!].entries()) {
      const d = await detail(a.token, id)
      expect(d.body).toMatchObject({ model: 'claude-test', tokens, charged: charged[i], usage_source: 'provider', outcome: 'ok' })
    }
    expect(await balance(a.token)).toBe(500 - 262)
    await flushAll(t)
    const r = await t.req('GET', '/v1/ledger', { token: a.token })
    const debits = r.text.trim().split('\n').map((l) => JSON.parse(l)).filter((e) => e.kind === 'debit' && e.model === 'claude-test')
    expect(debits.map((e) => [e.amount, e.tokens])).toEqual([[-131, tokens], [-131, tokens]])
    llm.usage = usage
  })

  test('the reservation weighs each input byte at the highest input price, a 1-hour cache write', async () => {
    const a = await t.signup()
    await vaultKey(t, a.token, 'sk-ant-vaulted-key-0123456789-ABCD', 'anthropic')
    const client = new Anthropic({ baseURL: `${base}/proxy/anthropic`, apiKey: a.token, maxRetries: 0 })
    const raw = JSON.stringify({ model: 'claude-test', max_tokens: 100, messages: [{ role: 'user', content: 'z'.repeat(20_000) }] })
    const { response } = await client.messages.create(JSON.parse(raw)).withResponse()
    expect(Number(response.headers.get('x-pab-reserved'))).toBe(reservation(CLAUDE, Buffer.byteLength(raw), 100))
    expect(Number(response.headers.get('x-pab-reserved'))).toBe(Math.ceil((Buffer.byteLength(raw) * 6000 + 100 * 15000) / 1e6) + 1)
  })
})

describe('a metered capability (POST /v1/call/{slug})', () => {
  test('charged the exact usage, not its flat price; the answer and the activity say so', async () => {
    const a = await t.signup()
    llm.usage = usage
    const r = await t.req('POST', '/v1/call/llm.test.chat', { token: a.token, body: { model: 'gpt-test', max_tokens: 100, messages: msgs } })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ slug: 'llm.test.chat', charged: 3, balance: 497, provider_status: 200 })
    const d = await detail(a.token, r.body.call_id)
    expect(d.body).toMatchObject({ slug: 'llm.test.chat', model: 'gpt-test', tokens: { input: 12000, cached: 3000, output: 2500 }, charged: 3, usage_source: 'provider' })
    const bad = await t.req('POST', '/v1/call/llm.test.chat', { token: a.token, body: { model: 'nope', messages: msgs } })
    expect(bad.body).toMatchObject({ error: 'BAD_REQUEST', field: 'model' })
  })
})

test('/llms-full.txt lists each metered route with its models and prices', async () => {
  const r = await t.req('GET', '/llms-full.txt')
  expect(r.status).toBe(200)
  expect(r.text).toContain('| gpt-test | 150 ($0.150) | 75 | – | 600 ($0.600) | 16384 |')
  expect(r.text).toContain('| claude-test | 3000 ($3.000) | 300 | 3750 / 6000 | 15000')
  expect(r.text).toContain('proxy:openai/<model-glob>')
})

test('after the flush, GET /v1/ledger shows the call as one debit of its exact charge, with the model and the tokens', async () => {
  const a = await t.signup()
  llm.usage = usage
  const { response } = await openai(a.token).chat.completions.create({ model: 'gpt-test', max_tokens: 1000, messages: msgs }).withResponse()
  const id = response.headers.get('x-pab-call-id')!
  await detail(a.token, id)
  await flushAll(t)
  const r = await t.req('GET', '/v1/ledger', { token: a.token })
  expect(r.status).toBe(200)
  const entries = r.text.trim().split('\n').map((l) => JSON.parse(l)).filter((e) => e.call_id === id)
  // The reservation was a hold (docs/metering.md): no entry of its own, nor a release.
  expect(entries.map((e) => [e.kind, e.model, e.tokens])).toEqual([['debit', 'gpt-test', { input: 12000, cached: 3000, output: 2500 }]])
  expect(entries[0].amount).toBe(-3)
})

/**
 * A metered proxy answer ends once its settle is queued on Redis, not once applied (issue 14,
 * DebitedCall.settleQueued): the settle goes on the connection before the answer's last byte, so
 * whatever this instance does next — the client's next request, its balance or activity read —
 * runs after it. Read back with no waiting, after each of a run of plain and streamed calls.
 */
describe('when a metered answer ends', () => {
  test('the call, the balance and the activity read right after each answer show its settle', async () => {
    const a = await t.signup()
    llm.usage = { input: 700, cached: 100, output: 900 }
    const cost = costMicro(GPT, llm.usage)
    const costs: number[] = []
    for (let i = 0; i < 24; i++) {
      const stream = i % 2 === 1
      const res = await fetch(`${base}/proxy/openai/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-test', max_tokens: 2000, stream, messages: [{ role: 'user', content: 'x'.repeat(800) }] }),
      })
      expect(res.status).toBe(200)
      await res.arrayBuffer()
      costs.push(cost)
      const { charged } = chargesOf(costs)
      // No polling: each read is this instance's next command after the answer ended.
      const detail = await t.req('GET', `/v1/activity/${res.headers.get('x-pab-call-id')}`, { token: a.token })
      expect(detail.status).toBe(200)
      expect(detail.body).toMatchObject({ usage_source: 'provider', charged: charged.at(-1), outcome: 'ok' })
      const balance = await t.req('GET', '/v1/balance', { token: a.token })
      expect(balance.body.balance).toBe(500 - charged.reduce((x, y) => x + y, 0))
    }
  })
})
