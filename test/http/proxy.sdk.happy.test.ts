/**
 * The official OpenAI and Anthropic SDKs, pointed at the proxy on a real listening server, talk to
 * a fake provider through it: plain and streamed completions work, the provider sees its own key
 * and never ours, and streamed chunks reach the client while the provider is still sending.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { createLlmFake, type LlmFake } from '../fakes/llm'
import { startTestApp, type TestApp } from '../helpers/harness'
import { eventually, llmCatalog, OPENAI_HOUSE_KEY } from '../helpers/proxy'
import { vaultEnv, vaultKey } from '../helpers/vault'

const VAULTED = 'sk-ant-vaulted-key-0123456789-ABCD'
let t: TestApp
let base: string
let llm: LlmFake

beforeAll(async () => {
  t = await startTestApp({ catalog: llmCatalog, env: { ...vaultEnv(), OPENAI_TEST_KEY: OPENAI_HOUSE_KEY } })
  llm = createLlmFake()
  t.fake.handler = llm.handler
  base = await t.listen()
})
afterAll(async () => {
  await t.close()
})

const balance = async (token: string) => (await t.req('GET', '/v1/balance', { token })).body.balance as number

/** Resolves the fake's gate on the first chunk the client sees; logs both events in order. */
function gateOnFirstChunk(): () => void {
  llm.events = []
  const { promise, resolve } = Promise.withResolvers<void>()
  llm.gate = promise
  let first = true
  return () => {
    if (!first) return
    first = false
    llm.events.push('client:first-chunk')
    resolve()
  }
}

describe('OpenAI SDK → /proxy/openai/v1', () => {
  test('a completion comes back as the provider sent it; the house key went up, our token did not', async () => {
    const a = await t.signup()
    const client = new OpenAI({ baseURL: `${base}/proxy/openai/v1`, apiKey: a.token, maxRetries: 0 })
    const before = t.fake.seen.length
    const r = await client.chat.completions.create({ model: 'gpt-fake', messages: [{ role: 'user', content: 'hi' }] })
    expect(r.choices[0]!.message.content).toBe('w0 w1 w2 w3 w4 ')
    expect(r.model).toBe('gpt-fake')
    const seen = t.fake.seen.slice(before)
    expect(seen).toHaveLength(1)
    expect(seen[0]!.path).toBe('/v1/chat/completions')
    expect(seen[0]!.headers.authorization).toBe(`Bearer ${OPENAI_HOUSE_KEY}`)
    expect(JSON.stringify(seen[0])).not.toContain(a.token)
    expect(JSON.parse(seen[0]!.body)).toMatchObject({ model: 'gpt-fake', messages: [{ role: 'user', content: 'hi' }] })
    expect(await balance(a.token)).toBe(497)
  })

  test('a streamed completion arrives chunk by chunk, the first before the provider sends the last', async () => {
    const a = await t.signup()
    const client = new OpenAI({ baseURL: `${base}/proxy/openai/v1`, apiKey: a.token, maxRetries: 0 })
    const onChunk = gateOnFirstChunk()
    const stream = await client.chat.completions.create({ model: 'gpt-fake', messages: [{ role: 'user', content: 'hi' }], stream: true })
    let text = ''
    let finish: string | null = null
    for await (const chunk of stream) {
      onChunk()
      text += chunk.choices[0]?.delta.content ?? ''
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    llm.gate = null
    expect(text).toBe('w0 w1 w2 w3 w4 ')
    expect(finish).toBe('stop')
    expect(llm.events).toEqual(['client:first-chunk', 'fake:last-sent'])
    expect(t.fake.seen.at(-1)!.headers.authorization).toBe(`Bearer ${OPENAI_HOUSE_KEY}`)
    expect(await balance(a.token)).toBe(497)
  })

  test('each proxied request lands in activity as proxy:openai, charged and ok', async () => {
    const a = await t.signup()
    const client = new OpenAI({ baseURL: `${base}/proxy/openai/v1`, apiKey: a.token, maxRetries: 0 })
    await client.chat.completions.create({ model: 'gpt-fake', messages: [{ role: 'user', content: 'hi' }] })
    const act = await eventually(
      () => t.req('GET', '/v1/activity', { token: a.token }),
      (r) => r.body.calls?.length === 1,
    )
    expect(act.body.calls[0]).toMatchObject({ slug: 'proxy:openai', charged: 3, refunded: false, outcome: 'ok', http_status: 200 })
    const bytes = (await t.s.metrics.proxyBytes.get()).values
    const of = (direction: string) => bytes.find((v) => v.labels.provider === 'openai' && v.labels.direction === direction)?.value ?? 0
    expect(of('upstream')).toBeGreaterThan(0)
    expect(of('downstream')).toBeGreaterThan(0)
  })
})

describe('Anthropic SDK → /proxy/anthropic', () => {
  test('a message comes back; the vaulted key went up in x-api-key, our token did not', async () => {
    const a = await t.signup()
    await vaultKey(t, a.token, VAULTED, 'anthropic')
    const client = new Anthropic({ baseURL: `${base}/proxy/anthropic`, apiKey: a.token, maxRetries: 0 })
    const before = t.fake.seen.length
    const m = await client.messages.create({ model: 'claude-fake', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] })
    expect(m.content[0]).toMatchObject({ type: 'text', text: 'w0 w1 w2 w3 w4 ' })
    const seen = t.fake.seen.slice(before)
    expect(seen).toHaveLength(1)
    expect(seen[0]!.path).toBe('/v1/messages')
    expect(seen[0]!.headers['x-api-key']).toBe(VAULTED)
    // The SDK's own API version wins over the catalog's default (which only fills a gap).
    expect(seen[0]!.headers['anthropic-version']).toMatch(/^\d{4}-\d{2}-\d{2}$/)
    expect(seen[0]!.headers.authorization).toBeUndefined()
    expect(JSON.stringify(seen[0])).not.toContain(a.token)
    expect(await balance(a.token)).toBe(498)
  })

  test('a streamed message arrives event by event, the first before the provider sends the last', async () => {
    const a = await t.signup()
    await vaultKey(t, a.token, VAULTED, 'anthropic')
    const client = new Anthropic({ baseURL: `${base}/proxy/anthropic`, apiKey: a.token, maxRetries: 0 })
    const onChunk = gateOnFirstChunk()
    const stream = await client.messages.create({ model: 'claude-fake', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }], stream: true })
    let text = ''
    const types: string[] = []
    for await (const ev of stream) {
      onChunk()
      types.push(ev.type)
      if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text
    }
    llm.gate = null
    expect(text).toBe('w0 w1 w2 w3 w4 ')
    expect(types.at(0)).toBe('message_start')
    expect(types.at(-1)).toBe('message_stop')
    expect(llm.events).toEqual(['client:first-chunk', 'fake:last-sent'])
    expect(t.fake.seen.at(-1)!.headers['x-api-key']).toBe(VAULTED)
    expect(await balance(a.token)).toBe(498)
  })

  test('the SDK helper stream (messages.stream) assembles the final message', async () => {
    const a = await t.signup()
    await vaultKey(t, a.token, VAULTED, 'anthropic')
    const client = new Anthropic({ baseURL: `${base}/proxy/anthropic`, apiKey: a.token, maxRetries: 0 })
    const final = await client.messages.stream({ model: 'claude-fake', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] }).finalMessage()
    expect(final.content[0]).toMatchObject({ type: 'text', text: 'w0 w1 w2 w3 w4 ' })
    expect(final.stop_reason).toBe('end_turn')
  })
})
