/**
 * The house lane of the proxy (docs/api.md §12, docs/house-lane.md), tried as an attacker would,
 * on providers configured as the shipped catalog.json is (pointed at the loopback fake): every path
 * family of the OpenAI and Anthropic API references is either priced (charged > 0) or refused
 * before the provider, in any spelling; the owner's own key still reaches every path; the client's
 * scope headers never ride along with the house key; the end-user id is the service's.
 */
import { afterAll, beforeAll, describe, expect, spyOn, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import OpenAI from 'openai'
import { Catalog, CatalogError, DEFAULT_CATALOG } from '../../src/catalog/catalog'
import { endUserId } from '../../src/metering/end-user'
import { createLlmFake, type LlmFake } from '../fakes/llm'
import { startTestApp, type TestApp } from '../helpers/harness'
import { eventually, rawRequest } from '../helpers/proxy'
import { vaultEnv, vaultKey } from '../helpers/vault'

const HOUSE_KEY = 'sk-house-openai-walk-0123456789'
const OWNER_KEY = 'sk-owner-own-key-9876543210'
const shipped = () => JSON.parse(readFileSync(DEFAULT_CATALOG, 'utf8'))

let t: TestApp
let base: string
let llm: LlmFake
const warnings: any[] = []

beforeAll(async () => {
  llm = createLlmFake()
  // A prompt as long as the tokens the fake reports (the input bound is the body's bytes), so that
  // each metered call costs whole credits.
  llm.usage = { input: 24000, cached: 0, output: 2000 }
  const logged = spyOn(console, 'log').mockImplementation((line: unknown) => {
    if (typeof line === 'string' && line.includes('house_path_unpriced')) warnings.push(JSON.parse(line))
  })
  try {
    t = await startTestApp({
      env: { ...vaultEnv(), LOG: 'json', OPENAI_API_KEY: HOUSE_KEY, CLAUDE_HOUSE_KEY: 'sk-ant-house-claude', UNPRICED_DAILY_REQUEST_CAP: '1000' },
      catalog: (fakeUrl) => {
        const c = shipped()
        c.providers.openai.base_url = fakeUrl
        c.providers.anthropic.base_url = fakeUrl
        // The operator pins the project its house key acts in (docs/house-lane.md, scope headers).
        c.providers.openai.headers = { 'OpenAI-Project': 'proj_operator' }
        // An Anthropic-dialect route on a house key (the shipped one is byok-only): where metadata.user_id is written.
        c.providers.claude = { ...c.providers.anthropic, key_env: 'CLAUDE_HOUSE_KEY', byok: false, proxy: { ...c.providers.anthropic.proxy, price: 0 } }
        return c
      },
    })
  } finally {
    logged.mockRestore()
  }
  // The start's warnings are read; the rest of the run logs nothing.
  ;(t.s.log as any).mode = 'silent'
  t.fake.handler = (req, seen) => {
    const path = new URL(req.url).pathname
    if (['/v1/chat/completions', '/v1/responses', '/v1/embeddings', '/v1/messages'].includes(path)) return llm.handler(req, seen)
    return Response.json({ object: 'list', data: [], path })
  }
  base = await t.listen()
})
afterAll(async () => {
  await t?.close()
})

const balance = async (token: string) => (await t.req('GET', '/v1/balance', { token })).body.balance as number
const prompt = 'x'.repeat(24000)

/** One request exactly as written (no client normalises the target), as JSON when it has a body. */
function send(token: string, method: string, target: string, body?: unknown, headers: Record<string, string> = {}) {
  const text = body === undefined ? '' : JSON.stringify(body)
  const h: Record<string, string> = { authorization: `Bearer ${token}`, ...headers }
  if (body !== undefined) Object.assign(h, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) })
  return rawRequest(base, target, h, method, text)
}

/** [method, path] of every path family of OpenAI's API reference that the shipped house lane neither prices nor opens. */
const OPENAI_CLOSED: [string, string][] = [
  ['POST', '/v1/completions'],
  ['POST', '/v1/images/generations'],
  ['POST', '/v1/images/edits'],
  ['POST', '/v1/images/variations'],
  ['POST', '/v1/audio/speech'],
  ['POST', '/v1/audio/transcriptions'],
  ['POST', '/v1/audio/translations'],
  ['POST', '/v1/moderations'],
  ['POST', '/v1/batches'],
  ['GET', '/v1/batches'],
  ['GET', '/v1/batches/batch_abc'],
  ['POST', '/v1/batches/batch_abc/cancel'],
  ['POST', '/v1/files'],
  ['GET', '/v1/files'],
  ['GET', '/v1/files/file-abc'],
  ['GET', '/v1/files/file-abc/content'],
  ['DELETE', '/v1/files/file-abc'],
  ['POST', '/v1/uploads'],
  ['POST', '/v1/uploads/upload_abc/parts'],
  ['POST', '/v1/uploads/upload_abc/complete'],
  ['POST', '/v1/uploads/upload_abc/cancel'],
  ['POST', '/v1/fine_tuning/jobs'],
  ['GET', '/v1/fine_tuning/jobs'],
  ['GET', '/v1/fine_tuning/jobs/ftjob-abc/events'],
  ['GET', '/v1/fine_tuning/jobs/ftjob-abc/checkpoints'],
  ['POST', '/v1/fine_tuning/jobs/ftjob-abc/cancel'],
  ['POST', '/v1/fine_tuning/checkpoints/ft:gpt-4o-mini:org:ckpt/permissions'],
  ['POST', '/v1/vector_stores'],
  ['GET', '/v1/vector_stores'],
  ['POST', '/v1/vector_stores/vs_abc/files'],
  ['POST', '/v1/vector_stores/vs_abc/file_batches'],
  ['POST', '/v1/vector_stores/vs_abc/search'],
  ['DELETE', '/v1/vector_stores/vs_abc'],
  ['POST', '/v1/assistants'],
  ['GET', '/v1/assistants'],
  ['DELETE', '/v1/assistants/asst_abc'],
  ['POST', '/v1/threads'],
  ['POST', '/v1/threads/runs'],
  ['POST', '/v1/threads/thread_abc/messages'],
  ['POST', '/v1/threads/thread_abc/runs'],
  ['GET', '/v1/threads/thread_abc/runs/run_abc/steps'],
  ['POST', '/v1/threads/thread_abc/runs/run_abc/submit_tool_outputs'],
  ['POST', '/v1/conversations'],
  ['GET', '/v1/conversations/conv_abc/items'],
  ['POST', '/v1/conversations/conv_abc/items'],
  ['DELETE', '/v1/conversations/conv_abc'],
  ['POST', '/v1/realtime/sessions'],
  ['POST', '/v1/realtime/client_secrets'],
  ['POST', '/v1/realtime/transcription_sessions'],
  ['POST', '/v1/realtime/calls'],
  ['GET', '/v1/organization/admin_api_keys'],
  ['POST', '/v1/organization/admin_api_keys'],
  ['GET', '/v1/organization/usage/completions'],
  ['GET', '/v1/organization/costs'],
  ['GET', '/v1/organization/projects'],
  ['POST', '/v1/organization/projects'],
  ['GET', '/v1/organization/projects/proj_abc/api_keys'],
  ['POST', '/v1/organization/invites'],
  ['GET', '/v1/organization/users'],
  ['GET', '/v1/organization/audit_logs'],
  ['POST', '/v1/evals'],
  ['GET', '/v1/evals'],
  ['POST', '/v1/evals/eval_abc/runs'],
  ['POST', '/v1/containers'],
  ['GET', '/v1/containers'],
  ['POST', '/v1/containers/cntr_abc/files'],
  ['POST', '/v1/videos'],
  ['GET', '/v1/videos'],
  ['GET', '/v1/videos/video_abc/content'],
  ['POST', '/v1/videos/video_abc/remix'],
  // Opened for reads only: deleting a fine-tuned model with the operator's key is not a read.
  ['DELETE', '/v1/models/ft:gpt-4o-mini:org:custom'],
  ['POST', '/v1/models'],
]

/** Anthropic's API reference: the shipped provider is byok-only, so every path needs the owner's key. */
const ANTHROPIC_ALL: [string, string][] = [
  ['POST', '/v1/messages'],
  ['POST', '/v1/messages/count_tokens'],
  ['POST', '/v1/messages/batches'],
  ['GET', '/v1/messages/batches'],
  ['GET', '/v1/messages/batches/msgbatch_abc/results'],
  ['POST', '/v1/messages/batches/msgbatch_abc/cancel'],
  ['POST', '/v1/files'],
  ['GET', '/v1/files'],
  ['GET', '/v1/files/file_abc/content'],
  ['DELETE', '/v1/files/file_abc'],
  ['GET', '/v1/models'],
  ['GET', '/v1/organizations/me'],
  ['GET', '/v1/organizations/users'],
  ['POST', '/v1/organizations/invites'],
  ['GET', '/v1/organizations/workspaces'],
  ['POST', '/v1/organizations/workspaces'],
  ['GET', '/v1/organizations/api_keys'],
  ['GET', '/v1/organizations/usage_report/messages'],
  ['GET', '/v1/organizations/cost_report'],
]

/** The metered routes, each with a realistic body: priced by their tokens. */
const OPENAI_METERED: [string, unknown][] = [
  ['/v1/chat/completions', { model: 'gpt-4o-mini', max_tokens: 2000, messages: [{ role: 'user', content: prompt }] }],
  ['/v1/responses', { model: 'gpt-4o-mini', max_output_tokens: 2000, input: prompt }],
  ['/v1/embeddings', { model: 'text-embedding-3-large', input: prompt }],
]

/** A closed request refused: 4xx, nothing at the provider, no money moved. */
async function expectRefused(token: string, method: string, target: string, body?: unknown) {
  const seen = t.fake.seen.length
  const r = await send(token, method, target, body ?? (method === 'GET' || method === 'DELETE' ? undefined : {}))
  expect({ target, method, status: r.status }).toMatchObject({ status: expect.any(Number) })
  if (r.status < 400 || r.status >= 500) throw new Error(`${method} ${target} was not refused: ${r.status} ${JSON.stringify(r.body)}`)
  expect(t.fake.seen.length).toBe(seen)
  return r
}

describe('the OpenAI surface on the shipped house lane', () => {
  test('every closed path family → 402 BYOK_REQUIRED naming the vault link; the provider sees none, no money moves', async () => {
    const a = await t.signup()
    const before = await balance(a.token)
    for (const [method, path] of OPENAI_CLOSED) {
      const r = await expectRefused(a.token, method, `/proxy/openai${path}`)
      expect({ path, status: r.status, error: r.body.error }).toEqual({ path, status: 402, error: 'BYOK_REQUIRED' })
      expect(r.body.provider).toBe('openai')
      expect(r.body.link_via).toBe('POST /v1/keys/link')
    }
    expect(await balance(a.token)).toBe(before)
    // Nothing was debited and refunded either: no call was filed.
    expect((await t.req('GET', '/v1/activity', { token: a.token })).body.calls).toHaveLength(0)
  })

  test('the metered routes are priced: each call is charged more than 0 credits', async () => {
    const a = await t.signup()
    for (const [path, body] of OPENAI_METERED) {
      const before = await balance(a.token)
      const seen = t.fake.seen.length
      const r = await send(a.token, 'POST', `/proxy/openai${path}`, body)
      expect({ path, status: r.status }).toEqual({ path, status: 200 })
      expect(t.fake.seen.length).toBe(seen + 1)
      const after = await eventually(() => balance(a.token), (b) => b < before - 1)
      expect({ path, charged: before - after > 0 }).toEqual({ path, charged: true })
    }
  })

  test('GET /v1/models is open (unpriced, request-capped): the only unpriced path the shipped catalog opens', async () => {
    const a = await t.signup()
    for (const path of ['/v1/models', '/v1/models/', '/v1/models/gpt-4o-mini']) {
      const seen = t.fake.seen.length
      const r = await send(a.token, 'GET', `/proxy/openai${path}`)
      expect({ path, status: r.status }).toEqual({ path, status: 200 })
      expect(t.fake.seen.at(seen)!.headers.authorization).toBe(`Bearer ${HOUSE_KEY}`)
    }
  })

  test('a refused request counts against no request cap: the unpriced opened path still answers after a thousand refusals', async () => {
    // The cap is per account and this one is 1000; refusals past it would turn /v1/models into REQUEST_CAP_REACHED.
    const a = await t.signup()
    for (let i = 0; i < 1001; i++) {
      const r = await send(a.token, 'POST', '/proxy/openai/v1/images/generations', { prompt: 'x' })
      if (r.status !== 402) throw new Error(`refusal ${i}: ${r.status}`)
    }
    expect((await send(a.token, 'GET', '/proxy/openai/v1/models')).status).toBe(200)
  }, 60_000)
})

/** Spellings of a closed path that an upstream might route like an opened one (or like itself). */
function spellings(path: string): string[] {
  const rest = path.slice('/v1/'.length)
  const hex = (c: string) => '%' + c.charCodeAt(0).toString(16).padStart(2, '0')
  return [
    `/v1/${hex(rest[0]!)}${rest.slice(1)}`,
    `/v1/${hex(rest[0]!).replace('%', '%25')}${rest.slice(1)}`,
    `/v1/${rest.replace(/\//g, '%2F')}`,
    `/v1/${rest.replace(/\//g, '%252F')}`,
    path.toUpperCase(),
    `/v1/${rest[0]!.toUpperCase()}${rest.slice(1)}`,
    `${path}/`,
    `${path};x`,
    `/v1/models/../${rest}`,
    `/v1/models/%2e%2e/${rest}`,
    `/v1/models/%252e%252e/${rest}`,
    `/v1/models%2F..%2F${rest}`,
    `/v1/models/..%2F${rest}`,
    `/v1/models;/../${rest}`,
    `/v1/models;x/${rest}`,
    `/v1//${rest}`,
    `/v1/models/${rest}`.replace('/models/', '/models%2F'),
  ]
}

describe('the same walk with spelling tricks', () => {
  test('no spelling of a closed OpenAI path reaches the provider or moves money', async () => {
    const a = await t.signup()
    const before = await balance(a.token)
    const families = [...new Map(OPENAI_CLOSED.map(([m, p]) => [p.split('/').slice(0, 3).join('/'), [m, p] as const])).values()]
    for (const [method, path] of families) for (const s of spellings(path)) await expectRefused(a.token, method, `/proxy/openai${s}`)
    expect(await balance(a.token)).toBe(before)
  }, 60_000)

  test('the metered routes and the opened path in another case or with a suffix are closed, not priced or opened', async () => {
    const a = await t.signup()
    const before = await balance(a.token)
    const [, chat] = OPENAI_METERED[0]!
    for (const target of ['/v1/Chat/Completions', '/V1/CHAT/COMPLETIONS', '/v1/chat/completions;x', '/v1/chat/completions%3Bx', '/v1/chat/Completions/'])
      await expectRefused(a.token, 'POST', `/proxy/openai${target}`, chat)
    for (const target of ['/v1/Models', '/V1/MODELS', '/v1/models;x', '/v1/modelsx', '/v1/m%4fdels']) await expectRefused(a.token, 'GET', `/proxy/openai${target}`)
    expect(await balance(a.token)).toBe(before)
  })
})

describe('the Anthropic surface (byok-only, as shipped)', () => {
  test('every path family, the metered one included, is refused without the owner key; the provider sees none, no money stays taken', async () => {
    const a = await t.signup()
    const before = await balance(a.token)
    for (const [method, path] of ANTHROPIC_ALL) {
      const body = path === '/v1/messages' ? { model: 'claude-3-5-haiku-latest', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] } : undefined
      const r = await expectRefused(a.token, method, `/proxy/anthropic${path}`, body)
      expect({ path, error: r.body.error }).toEqual({ path, error: 'VAULT_KEY_MISSING' })
      for (const s of spellings(path)) await expectRefused(a.token, method, `/proxy/anthropic${s}`, body)
    }
    expect(await eventually(() => balance(a.token), (b) => b === before)).toBe(before)
  }, 60_000)
})

describe("the owner's lane", () => {
  test('a vaulted key still reaches a path the house lane refuses, with the client scope headers; unpriced', async () => {
    const a = await t.signup()
    await vaultKey(t, a.token, OWNER_KEY, 'openai')
    const seen = t.fake.seen.length
    const r = await send(a.token, 'POST', '/proxy/openai/v1/images/generations', { prompt: 'a cat' }, { 'OpenAI-Organization': 'org-own', 'OpenAI-Project': 'proj_own' })
    expect(r.status).toBe(200)
    const up = t.fake.seen.at(seen)!
    expect(up.path).toBe('/v1/images/generations')
    expect(up.headers.authorization).toBe(`Bearer ${OWNER_KEY}`)
    expect(up.headers['openai-organization']).toBe('org-own')
    expect(up.headers['openai-project']).toBe('proj_own')
  })

  test("a metered call on the owner's key keeps the client's safety_identifier", async () => {
    const a = await t.signup()
    await vaultKey(t, a.token, OWNER_KEY, 'openai')
    const seen = t.fake.seen.length
    const r = await send(a.token, 'POST', '/proxy/openai/v1/chat/completions', { model: 'gpt-4o-mini', max_tokens: 16, safety_identifier: 'my-own-user-7', messages: [{ role: 'user', content: 'hi' }] })
    expect(r.status).toBe(200)
    expect(JSON.parse(t.fake.seen.at(seen)!.body).safety_identifier).toBe('my-own-user-7')
  })
})

describe('a vault that does not answer', () => {
  test('a closed path → 503 VAULT_UNAVAILABLE (the owner may hold a key), not BYOK_REQUIRED; an opened one falls back to the house key', async () => {
    const a = await t.signup()
    const real = t.s.vaultedKey
    t.s.vaultedKey = () => new Promise(() => {})
    try {
      const seen = t.fake.seen.length
      const r = await send(a.token, 'POST', '/proxy/openai/v1/images/generations', { prompt: 'a cat' })
      expect(r.status).toBe(503)
      expect(r.body.error).toBe('VAULT_UNAVAILABLE')
      expect(t.fake.seen.length).toBe(seen)
      const open = await send(a.token, 'GET', '/proxy/openai/v1/models')
      expect(open.status).toBe(200)
      expect(t.fake.seen.at(-1)!.headers.authorization).toBe(`Bearer ${HOUSE_KEY}`)
    } finally {
      t.s.vaultedKey = real
    }
    expect(await balance(a.token)).toBe(a.balance)
  })
})

describe('scope headers on the house lane', () => {
  test("the client's organisation, project and safety-identifier headers never reach the provider; the operator's pinned project does", async () => {
    const a = await t.signup()
    const seen = t.fake.seen.length
    const r = await send(a.token, 'GET', '/proxy/openai/v1/models', undefined, {
      'OpenAI-Organization': 'org-victim',
      'openai-project': 'proj_victim',
      'OpenAI-Safety-Identifier': 'someone-else',
      'X-Goog-User-Project': 'victim-project',
    })
    expect(r.status).toBe(200)
    const up = t.fake.seen.at(seen)!
    expect(up.headers.authorization).toBe(`Bearer ${HOUSE_KEY}`)
    expect(up.headers['openai-organization']).toBeUndefined()
    expect(up.headers['openai-safety-identifier']).toBeUndefined()
    expect(up.headers['x-goog-user-project']).toBeUndefined()
    expect(up.headers['openai-project']).toBe('proj_operator')
  })
})

describe('the end user on the house lane', () => {
  const client = (token: string) => new OpenAI({ baseURL: `${base}/proxy/openai/v1`, apiKey: token, maxRetries: 0 })
  const lastBody = () => JSON.parse(t.fake.seen.at(-1)!.body)

  test('the official SDK: safety_identifier is the account’s, stable, different per account, the client’s value replaced', async () => {
    const a = await t.signup()
    const b = await t.signup()
    const ask = (token: string, extra: Record<string, unknown> = {}) =>
      client(token).chat.completions.create({ model: 'gpt-4o-mini', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }], ...extra } as any)
    await ask(a.token)
    const first = lastBody().safety_identifier
    await ask(a.token, { safety_identifier: 'pab_' + '0'.repeat(32), user: 'impersonated' })
    const second = lastBody()
    await ask(b.token)
    const other = lastBody().safety_identifier
    expect(first).toMatch(/^pab_[0-9a-f]{32}$/)
    expect(first).toBe(endUserId(t.s.endUserSecret, a.account_id))
    expect(second.safety_identifier).toBe(first)
    expect(second.user).toBe(first)
    expect(other).toBe(endUserId(t.s.endUserSecret, b.account_id))
    expect(other).not.toBe(first)
  })

  test('responses carry safety_identifier, embeddings user; streamed chat too', async () => {
    const a = await t.signup()
    const id = endUserId(t.s.endUserSecret, a.account_id)
    await client(a.token).responses.create({ model: 'gpt-4o-mini', max_output_tokens: 16, input: 'hi', safety_identifier: 'mine' } as any)
    expect(lastBody().safety_identifier).toBe(id)
    await client(a.token).embeddings.create({ model: 'text-embedding-3-small', input: 'hi', user: 'mine' })
    expect(lastBody().user).toBe(id)
    const stream = await client(a.token).chat.completions.create({ model: 'gpt-4o-mini', max_tokens: 16, stream: true, messages: [{ role: 'user', content: 'hi' }] })
    for await (const _ of stream) void _
    expect(lastBody().safety_identifier).toBe(id)
    expect(lastBody().stream_options).toEqual({ include_usage: true })
  })

  test('a metered capability on the house key (the shipped llm.openai.chat) carries it too', async () => {
    const a = await t.signup()
    const r = await t.req('POST', '/v1/call/llm.openai.chat', { token: a.token, body: { model: 'gpt-4o-mini', max_tokens: 16, safety_identifier: 'someone-else', messages: [{ role: 'user', content: 'hi' }] } })
    expect(r.status).toBe(200)
    expect(lastBody().safety_identifier).toBe(endUserId(t.s.endUserSecret, a.account_id))
  })

  test('Anthropic on a house key: metadata.user_id replaced, the rest of metadata kept', async () => {
    const a = await t.signup()
    const r = await send(a.token, 'POST', '/proxy/claude/v1/messages', {
      model: 'claude-3-5-haiku-latest',
      max_tokens: 16,
      metadata: { user_id: 'someone-else', note: 'kept' },
      messages: [{ role: 'user', content: 'hi' }],
    })
    expect(r.status).toBe(200)
    expect(lastBody().metadata).toEqual({ user_id: endUserId(t.s.endUserSecret, a.account_id), note: 'kept' })
    await send(a.token, 'POST', '/proxy/claude/v1/messages', { model: 'claude-3-5-haiku-latest', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })
    expect(lastBody().metadata).toEqual({ user_id: endUserId(t.s.endUserSecret, a.account_id) })
  })
})

describe('the catalog at start', () => {
  test('one warning per house route whose allow opens a path at price 0 (the shipped openai route)', () => {
    const houseWarnings = warnings.filter((w) => w.msg === 'house_path_unpriced')
    expect(houseWarnings.map((w) => [w.provider, w.allow])).toEqual([['openai', ['GET /v1/models']]])
  })

  const load = (house: unknown) => {
    const c = shipped()
    c.providers.openai.proxy.house = house
    const file = join(tmpdir(), `pab-house-${Math.random().toString(36).slice(2)}.json`)
    writeFileSync(file, JSON.stringify(c))
    return () => Catalog.load(file, {})
  }

  test('a malformed house block stops the start with a message naming the field', () => {
    const cases: [unknown, RegExp][] = [
      [{ allow: 'v1/models' }, /\/providers\/openai\/proxy\/house\/allow/],
      [{ allow: ['v1/models'] }, /\/providers\/openai\/proxy\/house\/allow\/0/],
      [{ allow: ['FETCH /v1/models'] }, /\/providers\/openai\/proxy\/house\/allow\/0/],
      [{ allow: ['/v1/models%2F'] }, /\/providers\/openai\/proxy\/house\/allow\/0/],
      [{ allow: ['/v1/../admin'] }, /\/providers\/openai\/proxy\/house\/allow\/0/],
      [{ allow: ['/v2/models'] }, /\/providers\/openai\/proxy\/house\/allow\/0.*not under the route's paths/],
      [{ owned: [42] }, /\/providers\/openai\/proxy\/house\/owned\/0/],
      [{ allow: [], opened: ['/v1/'] }, /\/providers\/openai\/proxy\/house/],
      ['everything', /\/providers\/openai\/proxy\/house/],
    ]
    for (const [house, message] of cases) {
      expect(load(house)).toThrow(CatalogError)
      expect(load(house)).toThrow(message)
    }
    // `allow` may be left out (nothing opened besides the metered routes).
    expect(load({ owned: ['/v1/responses'] })).not.toThrow()
  })
})

describe('a deployment without a vault', () => {
  let t2: TestApp
  beforeAll(async () => {
    t2 = await startTestApp({
      env: { OPENAI_API_KEY: HOUSE_KEY },
      catalog: (fakeUrl) => {
        const c = shipped()
        c.providers.openai.base_url = fakeUrl
        return c
      },
    })
  })
  afterAll(async () => {
    await t2?.close()
  })

  test('a closed path → 404 PROXY_UNKNOWN_PROVIDER naming what the house key serves (house_allow); the provider sees nothing', async () => {
    const a = await t2.signup()
    const r = await t2.req('POST', '/proxy/openai/v1/images/generations', { token: a.token, body: { prompt: 'a cat' } })
    expect(r.status).toBe(404)
    expect(r.body).toMatchObject({ error: 'PROXY_UNKNOWN_PROVIDER', provider: 'openai', house_allow: ['/v1/chat/completions', '/v1/responses', '/v1/embeddings', 'GET /v1/models'] })
    expect(t2.fake.seen).toHaveLength(0)
    expect((await t2.req('GET', '/v1/balance', { token: a.token })).body.balance).toBe(a.balance)
  })
})
