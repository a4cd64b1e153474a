/**
 * Provider objects on the house lane belong to the account that made them (docs/house-objects.md).
 * Two accounts share the operator's OpenAI organisation (a fake that stores what it creates) through
 * the official SDK: A's stored responses and chat completions are A's and its agents'; B can neither
 * read, list, delete, cancel, update nor chain from them, and none of B's attempts reaches the
 * provider or moves money. Bodies naming objects the house lane never creates are refused; the
 * owner's lane (a vaulted key) is the owner's own organisation and is not checked.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import OpenAI from 'openai'
import { responsesFrames } from '../fakes/llm'
import { createOpenAIStore, type OpenAIStore } from '../fakes/openai-store'
import { startTestApp, type TestApp } from '../helpers/harness'
import { meteredCatalog } from '../helpers/metering'
import { OPENAI_HOUSE_KEY } from '../helpers/proxy'
import { vaultEnv, vaultKey } from '../helpers/vault'
import { OWNED_TTL_S } from '../../src/proxy/house-objects'

let t: TestApp
let base: string
let store: OpenAIStore

const houseCatalog = (url: string) => {
  const c = meteredCatalog(url)
  c.providers.openai.proxy.house = { owned: ['/v1/responses', '/v1/chat/completions'] }
  return c
}

beforeAll(async () => {
  t = await startTestApp({ catalog: houseCatalog, env: { ...vaultEnv(), OPENAI_TEST_KEY: OPENAI_HOUSE_KEY } })
  store = createOpenAIStore()
  t.fake.handler = store.handler
  base = await t.listen()
})
afterAll(async () => {
  await t.close()
})

/** The body of the last refused answer any client read (the SDK keeps only its `error` member). */
let lastRefusal: unknown = null
const keepRefusal: typeof fetch = Object.assign(async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
  const res = await fetch(input, init)
  if (!res.ok) lastRefusal = await res.clone().json().catch(() => null)
  return res
}, fetch)
const openai = (token: string) => new OpenAI({ baseURL: `${base}/proxy/openai/v1`, apiKey: token, maxRetries: 0, fetch: keepRefusal })
const balance = async (token: string) => (await t.req('GET', '/v1/balance', { token })).body.balance as number
const agentOf = async (token: string) => {
  const r = await t.req('POST', '/v1/agents', { token, body: { name: `worker-${Math.random().toString(36).slice(2, 6)}`, budget: 100 } })
  expect(r.status).toBe(201)
  return r.body.token as string
}
const ask = { model: 'gpt-test', max_output_tokens: 64, input: 'hello' }
const chat = { model: 'gpt-test', max_tokens: 64, messages: [{ role: 'user' as const, content: 'hello' }], store: true }

/** What an SDK call was refused with: the status and our flat error body. */
async function refusal(p: Promise<unknown>): Promise<{ status: number; body: any }> {
  lastRefusal = null
  try {
    await p
  } catch (e) {
    if (e instanceof OpenAI.APIError) return { status: e.status ?? 0, body: lastRefusal }
    throw e
  }
  throw new Error('the call was not refused')
}

/** A's objects: two responses (plain, streamed) and two stored chat completions (plain, streamed). */
async function objectsOf(token: string) {
  const c = openai(token)
  const plain = await c.responses.create(ask)
  let streamed = ''
  for await (const ev of await c.responses.create({ ...ask, stream: true })) if (ev.type === 'response.created') streamed = ev.response.id
  const completion = await c.chat.completions.create(chat)
  let streamedCompletion = ''
  for await (const chunk of await c.chat.completions.create({ ...chat, stream: true })) streamedCompletion ||= chunk.id
  return { responses: [plain.id, streamed], completions: [completion.id, streamedCompletion] }
}

describe('house lane: provider objects are the account’s', () => {
  test('A and its agents (any depth) read, list the items of, cancel, update and delete what A created', async () => {
    const a = await t.signup()
    const mine = await objectsOf(a.token)
    expect(mine.responses.every((id) => store.responses.has(id))).toBe(true)
    expect(mine.completions.every((id) => store.completions.has(id))).toBe(true)
    const agent = await agentOf(a.token)
    const subAgent = await agentOf(agent)
    for (const token of [a.token, agent, subAgent]) {
      const c = openai(token)
      for (const id of mine.responses) {
        expect((await c.responses.retrieve(id)).id).toBe(id)
        expect((await c.responses.inputItems.list(id)).data).toEqual([])
      }
      for (const id of mine.completions) {
        expect((await c.chat.completions.retrieve(id)).id).toBe(id)
        expect((await c.chat.completions.messages.list(id)).data).toEqual([])
      }
    }
    // An agent's objects are its account's too.
    const agents = await objectsOf(agent)
    expect((await openai(a.token).responses.retrieve(agents.responses[1]!)).id).toBe(agents.responses[1]!)
    expect((await openai(subAgent).chat.completions.retrieve(agents.completions[1]!)).id).toBe(agents.completions[1]!)
    const c = openai(subAgent)
    expect((await c.responses.cancel(mine.responses[0]!)).id).toBe(mine.responses[0]!)
    expect((await c.chat.completions.update(mine.completions[0]!, { metadata: { k: 'v' } })).id).toBe(mine.completions[0]!)
    await c.responses.delete(mine.responses[0]!)
    expect((await c.chat.completions.delete(mine.completions[0]!)).deleted).toBe(true)
    expect(store.responses.has(mine.responses[0]!)).toBe(false)
    expect(store.completions.has(mine.completions[0]!)).toBe(false)
  })

  test('B cannot retrieve, list the items of, cancel, update, delete or chain from A’s objects: NOT_FOUND, nothing reaches the provider, no money moves', async () => {
    const a = await t.signup()
    const b = await t.signup()
    const mine = await objectsOf(a.token)
    const bAgent = await agentOf(b.token)
    const before = { seen: t.fake.seen.length, balance: await balance(b.token) }
    for (const token of [b.token, bAgent]) {
      const c = openai(token)
      for (const id of mine.responses) {
        for (const attempt of [() => c.responses.retrieve(id), () => c.responses.inputItems.list(id), () => c.responses.delete(id), () => c.responses.cancel(id)])
          expect(await refusal(attempt())).toMatchObject({ status: 404, body: { error: 'NOT_FOUND', field: 'path' } })
        const chained = await refusal(c.responses.create({ ...ask, previous_response_id: id }))
        expect(chained).toMatchObject({ status: 404, body: { error: 'NOT_FOUND', field: 'previous_response_id', resource: 'response' } })
      }
      for (const id of mine.completions)
        for (const attempt of [() => c.chat.completions.retrieve(id), () => c.chat.completions.messages.list(id), () => c.chat.completions.delete(id), () => c.chat.completions.update(id, { metadata: { k: 'v' } })])
          expect(await refusal(attempt())).toMatchObject({ status: 404, body: { error: 'NOT_FOUND', field: 'path' } })
    }
    expect(t.fake.seen.length).toBe(before.seen)
    expect(await balance(b.token)).toBe(before.balance)
    expect(mine.responses.every((id) => store.responses.has(id))).toBe(true)
    expect(mine.completions.every((id) => store.completions.has(id))).toBe(true)
  })

  test('A and its agents chain from A’s finished responses; the input the provider holds is bounded by the record of its usage', async () => {
    const a = await t.signup()
    const mine = await objectsOf(a.token)
    const agent = await agentOf(a.token)
    const key = (id: string) => t.s.ctx.keys.ownedObject(a.account_id, 'openai', id)
    // The fake's answers use 5 input and 5 output tokens: a response chained from one carries 10.
    for (const id of mine.responses) expect(await t.s.ctx.redis.get(key(id))).toBe('10')
    for (const token of [a.token, agent]) {
      const seen = t.fake.seen.length
      const chained = await openai(token).responses.create({ ...ask, previous_response_id: mine.responses[0]! })
      expect(chained.id).toStartWith('resp_')
      expect(JSON.parse(t.fake.seen.at(-1)!.body).previous_response_id).toBe(mine.responses[0]!)
      expect(t.fake.seen.length).toBe(seen + 1)
      // The chained response is A's too, and carries its own input and output plus what it chained from.
      expect(await t.s.ctx.redis.get(key(chained.id))).toBe('10')
    }
    // A response still being generated has no usage to bound what a chain from it carries.
    await t.s.ctx.redis.set(key(mine.responses[1]!), 'open', 'KEEPTTL')
    const running = await refusal(openai(a.token).responses.create({ ...ask, previous_response_id: mine.responses[1]! }))
    expect(running).toMatchObject({ status: 400, body: { error: 'BAD_REQUEST', field: 'previous_response_id' } })
  })

  test('no spelling of the path reaches another account’s object (case, `;x`, percent-escapes, a trailing slash, an unknown sub-path)', async () => {
    const a = await t.signup()
    const b = await t.signup()
    const [id] = (await objectsOf(a.token)).responses
    const before = t.fake.seen.length
    const spellings = [`/v1/Responses/${id}`, `/v1/responses;x/${id}`, `/v1/responses/${id}/`, `/v1/responses/%72${id!.slice(1)}`, `/v1/responses/${id}/input_items?limit=1`, `/v1/responses/input_tokens`, `/v1/responses/x/v1/responses`]
    for (const path of spellings) {
      const r = await fetch(`${base}/proxy/openai${path}`, { headers: { authorization: `Bearer ${b.token}` } })
      // Refused either way: a spelling the house lane does not open (402, the closure, case-sensitive)
      // or one it opens whose object is not B's (404).
      expect([[402, 404].includes(r.status), path]).toEqual([true, path])
    }
    expect(t.fake.seen.length).toBe(before)
    // The same escape names A's own object for A.
    const r = await fetch(`${base}/proxy/openai/v1/responses/%72${id!.slice(1)}`, { headers: { authorization: `Bearer ${a.token}` } })
    expect(((await r.json()) as { id: string }).id).toBe(id!)
  })

  test('lists of every account’s objects are refused on the house lane', async () => {
    const a = await t.signup()
    await objectsOf(a.token)
    const before = t.fake.seen.length
    const c = openai(a.token)
    expect(await refusal(c.chat.completions.list())).toMatchObject({ status: 404, body: { error: 'NOT_FOUND', field: 'path' } })
    const r = await fetch(`${base}/proxy/openai/v1/responses`, { headers: { authorization: `Bearer ${a.token}` } })
    expect(r.status).toBe(404)
    expect(await r.json()).toMatchObject({ error: 'NOT_FOUND', field: 'path' })
    expect(t.fake.seen.length).toBe(before)
  })

  test('a body naming a file, vector store, conversation, prompt, container or stored item is refused before the provider', async () => {
    const a = await t.signup()
    const c = openai(a.token)
    const before = { seen: t.fake.seen.length, balance: await balance(a.token) }
    const cases: [() => Promise<unknown>, string, string][] = [
      [() => c.responses.create({ ...ask, input: [{ role: 'user', content: [{ type: 'input_text', text: 'x' }, { type: 'input_file', file_id: 'file-abc' }] }] }), 'input[0].content[1].file_id', 'file'],
      [() => c.responses.create({ ...ask, input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file-img', detail: 'auto' }] }] }), 'input[0].content[0].file_id', 'file'],
      [() => c.responses.create({ ...ask, tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }] }), 'tools[0].vector_store_ids', 'vector store'],
      [() => c.responses.create({ ...ask, tools: [{ type: 'code_interpreter', container: 'cntr_1' }] }), 'tools[0].container', 'container'],
      [() => c.responses.create({ ...ask, tools: [{ type: 'code_interpreter', container: { type: 'auto', file_ids: ['file-1'] } }] }), 'tools[0].container.file_ids', 'file'],
      [() => c.responses.create({ ...ask, conversation: 'conv_1' }), 'conversation', 'conversation'],
      [() => c.responses.create({ ...ask, prompt: { id: 'pmpt_1' } }), 'prompt', 'prompt'],
      [() => c.responses.create({ ...ask, input: [{ type: 'item_reference', id: 'msg_1' }] }), 'input[0].id', 'stored item'],
      [() => c.chat.completions.create({ ...chat, messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-abc' } }] }] }), 'messages[0].content[0].file.file_id', 'file'],
      [() => c.chat.completions.create({ ...chat, messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', audio: { id: 'audio_1' } }] }), 'messages[1].audio.id', 'audio answer'],
    ]
    for (const [call, field, resource] of cases) expect(await refusal(call())).toMatchObject({ status: 404, body: { error: 'NOT_FOUND', field, resource } })
    expect(t.fake.seen.length).toBe(before.seen)
    expect(await balance(a.token)).toBe(before.balance)
    // A tool's own parameter schema may name a property `file_id`: that names no object.
    const tool = { type: 'function' as const, name: 'open', strict: false, parameters: { type: 'object', properties: { file_id: { type: 'string' } } } }
    expect((await c.responses.create({ ...ask, tools: [tool] })).id).toMatch(/^resp_/)
  })

  test('the owner’s lane (a vaulted key) is the owner’s organisation: nothing is checked or recorded', async () => {
    const a = await t.signup()
    const owner = await t.signup()
    const { responses, completions } = await objectsOf(a.token)
    const id = responses[0]!
    await vaultKey(t, owner.token, 'sk-owner-own-openai-key-0123456789', 'openai')
    const c = openai(owner.token)
    expect((await c.responses.retrieve(id)).id).toBe(id)
    expect((await c.chat.completions.retrieve(completions[1]!)).id).toBe(completions[1]!)
    expect((await c.responses.inputItems.list(id)).data).toEqual([])
    const created = await c.responses.create(ask)
    expect(await t.redis.exists(t.s.ctx.keys.ownedObject(owner.account_id, 'openai', created.id))).toBe(0)
    const seen = t.fake.seen.at(-1)!
    expect(seen.headers.authorization).toBe('Bearer sk-owner-own-openai-key-0123456789')
  })

  test('a stream cut anywhere, its events ended by CRLF, still has its id recorded from its first event', async () => {
    const a = await t.signup()
    const handler = t.fake.handler
    const id = 'resp_cut7x' + Math.random().toString(36).slice(2, 8)
    t.fake.handler = () => {
      const text = responsesFrames('gpt-test', 3, { input: 5, cached: 0, output: 5 })
        .map((f) => f.replaceAll('resp_fake', id).replaceAll('\n', '\r\n'))
        .join('')
      const bytes = new TextEncoder().encode(text)
      let at = 0
      return new Response(
        new ReadableStream({
          pull(c) {
            if (at >= bytes.length) return c.close()
            c.enqueue(bytes.slice(at, (at += 7)))
          },
        }),
        { headers: { 'content-type': 'text/event-stream' } },
      )
    }
    try {
      let created = ''
      for await (const ev of await openai(a.token).responses.create({ ...ask, stream: true })) if (ev.type === 'response.created') created = ev.response.id
      expect(created).toBe(id)
    } finally {
      t.fake.handler = handler
    }
    // Read on the service's own connection: the record is sent, not awaited, ahead of the bytes
    // that carry the id, and every later command on that connection runs after it (house-objects.ts).
    expect(await t.s.ctx.redis.exists(t.s.ctx.keys.ownedObject(a.account_id, 'openai', id))).toBe(1)
  })

  test('the record lives in the account’s slot with a 30-day TTL, and only a 2xx answer is recorded', async () => {
    const a = await t.signup()
    const { responses, completions } = await objectsOf(a.token)
    for (const id of [...responses, ...completions]) {
      const key = t.s.ctx.keys.ownedObject(a.account_id, 'openai', id)
      expect(key.startsWith(t.s.ctx.keys.account(a.account_id).split(':acct:')[0]!)).toBe(true)
      const ttl = await t.redis.ttl(key)
      expect(ttl).toBeGreaterThan(OWNED_TTL_S - 60)
      expect(ttl).toBeLessThanOrEqual(OWNED_TTL_S)
    }
    // Once the record lapses, the object is no longer the account's.
    await t.redis.del(t.s.ctx.keys.ownedObject(a.account_id, 'openai', responses[0]!))
    expect(await refusal(openai(a.token).responses.retrieve(responses[0]!))).toMatchObject({ status: 404, body: { error: 'NOT_FOUND' } })
    // An error answer's id is not recorded (the fake answers 404 with an id-less body; a body with
    // a top-level id on a 4xx must not become the account's either).
    const handler = t.fake.handler
    t.fake.handler = () => Response.json({ id: 'resp_not_created', error: { message: 'bad' } }, { status: 400 })
    try {
      await refusal(openai(a.token).responses.create(ask))
    } finally {
      t.fake.handler = handler
    }
    expect(await t.redis.exists(t.s.ctx.keys.ownedObject(a.account_id, 'openai', 'resp_not_created'))).toBe(0)
  })
})
