/**
 * The owner's lane is not billed twice (docs/api.md §12): a metered route used with the account's
 * vaulted key is charged `byok_fee_pct` percent of the exact token cost, with the reservation,
 * settle and remainder rules of the house lane; at 0 % the call is unpriced (counted against the
 * daily request cap) and model allowlists still apply. Shown with the official `openai` and
 * `@anthropic-ai/sdk` clients, plain and streamed, on both lanes, the ledger checked exact in Redis
 * and, after the flush, in Postgres.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { createLlmFake, type LlmFake } from '../fakes/llm'
import { startTestApp, type TestApp } from '../helpers/harness'
import { assertLedger } from '../helpers/invariants'
import { checkRedisInvariant } from '../helpers/ledger'
import { chargesOf, costMicro } from '../helpers/metering'
import { eventually, OPENAI_HOUSE_KEY } from '../helpers/proxy'
import { vaultEnv, vaultKey } from '../helpers/vault'

const ANTHROPIC_HOUSE_KEY = 'sk-ant-house-0123456789abcdef'
const OWNER_OPENAI_KEY = 'sk-owner-openai-0123456789-WXYZ'
const OWNER_ANTHROPIC_KEY = 'sk-ant-owner-0123456789-ABCD'
// Prices that are no multiple of 100, so that 5 % of a cost ends in hundredths of a micro-credit.
const GPT_FEE = { input: 151, cached_input: 77, output: 601, max_output: 16384 }
const CLAUDE_FEE = { input: 3001, cached_input: 301, output: 15001, max_output: 8192 }
const REQUEST_CAP = 6
/** Its max_output costs ~65,500 credits on the house lane, ~3,280 at 5 %: a 500-credit signup is clamped on both. */
const GPT_DEAR = { input: 150, output: 4_000_000, max_output: 16384 }

/** Both providers with a house key (neither is `byok`), so each has both lanes; one fee for both. */
function feeCatalog(pct: number) {
  return (fakeUrl: string) => ({
    providers: {
      openai: {
        base_url: fakeUrl,
        key_env: 'OPENAI_TEST_KEY',
        auth: { header: 'authorization', scheme: 'Bearer' },
        proxy: {
          price: 3,
          paths: ['/v1/'],
          metered: { dialect: 'openai', routes: ['/v1/chat/completions', '/v1/responses'], min_output: 16, byok_fee_pct: pct, models: { 'gpt-fee': GPT_FEE, 'gpt-other': GPT_FEE, 'gpt-dear': GPT_DEAR } },
        },
      },
      anthropic: {
        base_url: fakeUrl,
        key_env: 'ANTHROPIC_TEST_KEY',
        auth: { header: 'x-api-key' },
        headers: { 'anthropic-version': '2023-06-01' },
        proxy: { price: 2, paths: ['/v1/'], metered: { dialect: 'anthropic', routes: ['/v1/messages'], min_output: 16, byok_fee_pct: pct, models: { 'claude-fee': CLAUDE_FEE } } },
      },
    },
    capabilities: [],
  })
}

interface Lab {
  t: TestApp
  llm: LlmFake
  base: string
}

async function startLab(pct: number): Promise<Lab> {
  const t = await startTestApp({
    catalog: feeCatalog(pct),
    env: { ...vaultEnv(), OPENAI_TEST_KEY: OPENAI_HOUSE_KEY, ANTHROPIC_TEST_KEY: ANTHROPIC_HOUSE_KEY, UNPRICED_DAILY_REQUEST_CAP: String(REQUEST_CAP) },
  })
  const llm = createLlmFake()
  t.fake.handler = llm.handler
  return { t, llm, base: await t.listen() }
}

let five: Lab
let zero: Lab
beforeAll(async () => {
  five = await startLab(5)
  zero = await startLab(0)
})
afterAll(async () => {
  await five?.t.close()
  await zero?.t.close()
})

const GPT_USAGE = { input: 12001, cached: 3, output: 2507 }
const CLAUDE_USAGE = { input: 901, cached: 2003, output: 133 }
// The input bound is the body's byte length: prompts at least as long as the tokens reported.
const gptPrompt = [{ role: 'user' as const, content: 'x'.repeat(16000) }]
const claudePrompt = [{ role: 'user' as const, content: 'y'.repeat(3000) }]

const openai = (lab: Lab, token: string) => new OpenAI({ baseURL: `${lab.base}/proxy/openai/v1`, apiKey: token, maxRetries: 0 })
const anthropic = (lab: Lab, token: string) => new Anthropic({ baseURL: `${lab.base}/proxy/anthropic`, apiKey: token, maxRetries: 0 })

/**
 * Charges of successive owner's-lane settles at `pct` percent, from a remainder of 0, in BigInt:
 * floor((r + cost × pct / 100) / 1e6), the rest carried exactly (hundredths of a micro-credit).
 */
function feeCharges(costs: number[], pct: number): number[] {
  let rest = 0n
  return costs.map((c) => {
    const total = rest + BigInt(c) * BigInt(pct)
    const charged = total / 100_000_000n
    rest = total - charged * 100_000_000n
    return Number(charged)
  })
}

/** One call of each kind through the SDKs, plain and streamed; answers each call's id and its header reservation. */
async function callsOfEveryKind(lab: Lab, token: string): Promise<{ ids: string[]; reserved: number[]; costs: number[] }> {
  const ids: string[] = []
  const reserved: number[] = []
  const costs: number[] = []
  const note = (h: Headers, cost: number) => {
    ids.push(h.get('x-pab-call-id')!)
    reserved.push(Number(h.get('x-pab-reserved')))
    costs.push(cost)
  }
  const gptCost = costMicro(GPT_FEE, GPT_USAGE)
  const claudeCost = costMicro(CLAUDE_FEE, CLAUDE_USAGE)
  lab.llm.usage = GPT_USAGE
  const oa = openai(lab, token)
  const plain = await oa.chat.completions.create({ model: 'gpt-fee', max_tokens: 1000, messages: gptPrompt }).withResponse()
  expect(plain.data.usage?.completion_tokens).toBe(2507)
  note(plain.response.headers, gptCost)
  const stream = await oa.chat.completions.create({ model: 'gpt-fee', max_tokens: 1000, messages: gptPrompt, stream: true }).withResponse()
  let text = ''
  for await (const chunk of stream.data) text += chunk.choices[0]?.delta.content ?? ''
  expect(text).toBe('w0 w1 w2 w3 w4 ')
  note(stream.response.headers, gptCost)
  const resp = await oa.responses.create({ model: 'gpt-fee', input: 'x'.repeat(16000), max_output_tokens: 3000 }).withResponse()
  expect(resp.data.usage?.output_tokens).toBe(2507)
  note(resp.response.headers, gptCost)
  const respStream = await oa.responses.create({ model: 'gpt-fee', input: 'x'.repeat(16000), max_output_tokens: 3000, stream: true }).withResponse()
  let completed = false
  for await (const ev of respStream.data) if (ev.type === 'response.completed') completed = true
  expect(completed).toBe(true)
  note(respStream.response.headers, gptCost)

  lab.llm.usage = CLAUDE_USAGE
  const an = anthropic(lab, token)
  const m = await an.messages.create({ model: 'claude-fee', max_tokens: 200, messages: claudePrompt }).withResponse()
  expect(m.data.usage.output_tokens).toBe(133)
  note(m.response.headers, claudeCost)
  const ms = await an.messages.create({ model: 'claude-fee', max_tokens: 200, messages: claudePrompt, stream: true }).withResponse()
  let out = 0
  for await (const ev of ms.data) if (ev.type === 'message_delta') out = ev.usage.output_tokens
  expect(out).toBe(133)
  note(ms.response.headers, claudeCost)
  return { ids, reserved, costs }
}

const balance = async (lab: Lab, token: string) => (await lab.t.req('GET', '/v1/balance', { token })).body.balance as number
const detail = (lab: Lab, token: string, id: string) => eventually(() => lab.t.req('GET', `/v1/activity/${id}`, { token }), (r) => r.status === 200)
const stores = (lab: Lab) => ({ ctx: lab.t.s.ctx, db: lab.t.s.db, flusher: lab.t.s.flusher })

/** The keys the fake provider saw on the requests it got since `from`. */
const keysSeen = (lab: Lab, from: number) => lab.t.fake.seen.slice(from).map((s) => s.headers['authorization'] ?? s.headers['x-api-key'])

describe('the house lane (no vaulted key)', () => {
  test('charges the full exact cost, the remainder carried; the provider sees the house keys', async () => {
    const a = await five.t.signup()
    const from = five.t.fake.seen.length
    const { ids, costs } = await callsOfEveryKind(five, a.token)
    expect(keysSeen(five, from)).toEqual([...Array(4).fill(`Bearer ${OPENAI_HOUSE_KEY}`), ANTHROPIC_HOUSE_KEY, ANTHROPIC_HOUSE_KEY])
    const { charged } = chargesOf(costs)
    const spent = charged.reduce((x, y) => x + y, 0)
    expect(await eventually(() => balance(five, a.token), (b) => b === 500 - spent)).toBe(500 - spent)
    for (const [i, id] of ids.entries()) expect((await detail(five, a.token, id)).body.charged).toBe(charged[i])
    await checkRedisInvariant(five.t, a.account_id)
    await assertLedger(stores(five), [{ account: a.account_id, balance: 500 - spent, debits: ids }])
  })
})

describe("the owner's lane at 5 %", () => {
  test('charges 5 % of the exact cost, the hundredths of a micro-credit carried across calls; the provider sees the owner’s keys', async () => {
    const a = await five.t.signup()
    await vaultKey(five.t, a.token, OWNER_OPENAI_KEY, 'openai')
    await vaultKey(five.t, a.token, OWNER_ANTHROPIC_KEY, 'anthropic')
    const from = five.t.fake.seen.length
    const all: { ids: string[]; costs: number[] } = { ids: [], costs: [] }
    // Three rounds of six calls: enough for 5 % of these costs to add up to whole credits.
    for (let round = 0; round < 3; round++) {
      const r = await callsOfEveryKind(five, a.token)
      all.ids.push(...r.ids)
      all.costs.push(...r.costs)
      // The reservation: 5 % of the house lane's, rounded up.
      const gptHouse = Math.ceil((Buffer.byteLength(JSON.stringify({ model: 'gpt-fee', max_tokens: 1000, messages: gptPrompt })) * 151 + 1000 * 601) / 1e6) + 1
      expect(r.reserved[0]).toBe(Math.ceil((gptHouse * 5) / 100))
    }
    const seen = keysSeen(five, from)
    expect(seen).toHaveLength(18)
    expect(seen.every((k) => k === `Bearer ${OWNER_OPENAI_KEY}` || k === OWNER_ANTHROPIC_KEY)).toBe(true)
    expect(seen.filter((k) => k === OWNER_ANTHROPIC_KEY)).toHaveLength(6)

    const charged = feeCharges(all.costs, 5)
    const spent = charged.reduce((x, y) => x + y, 0)
    // Each cost's 5 % is a fraction of a micro-credit: exact only if the hundredths are carried.
    expect(all.costs.every((c) => (c * 5) % 100 !== 0)).toBe(true)
    expect(spent).toBe(Number((all.costs.reduce((x, c) => x + BigInt(c), 0n) * 5n) / 100_000_000n))
    expect(spent).toBeGreaterThan(0)
    expect(spent).toBeLessThan(chargesOf(all.costs).charged.reduce((x, y) => x + y, 0) / 10)
    expect(await eventually(() => balance(five, a.token), (b) => b === 500 - spent)).toBe(500 - spent)
    for (const [i, id] of all.ids.entries()) {
      const d = await detail(five, a.token, id)
      expect(d.body).toMatchObject({ charged: charged[i], usage_source: 'provider', outcome: 'ok' })
      expect(d.body.model).toBe(i % 6 < 4 ? 'gpt-fee' : 'claude-fee')
      expect(d.body.tokens).toMatchObject(i % 6 < 4 ? GPT_USAGE : CLAUDE_USAGE)
    }
    // The remainder left: Σ cost × 5 / 100 − Σ charged × 1e6, in micro-credits and hundredths.
    const total = all.costs.reduce((x, c) => x + BigInt(c) * 5n, 0n) - BigInt(spent) * 100_000_000n
    const [rem, remC] = await five.t.s.ctx.redis.hmget(five.t.s.ctx.keys.account(a.account_id), 'mc_rem', 'mc_rem_c')
    expect(BigInt(rem ?? '0') * 100n + BigInt(remC ?? '0')).toBe(total)
    await checkRedisInvariant(five.t, a.account_id)
    await assertLedger(stores(five), [{ account: a.account_id, balance: 500 - spent, debits: all.ids }])
  })

  test('a flat-priced path charges its price on the owner’s lane as on the house lane', async () => {
    const a = await five.t.signup()
    await vaultKey(five.t, a.token, OWNER_OPENAI_KEY, 'openai')
    five.t.fake.handler = () => Response.json({ data: [] })
    try {
      const r = await fetch(`${five.base}/proxy/openai/v1/models`, { headers: { authorization: `Bearer ${a.token}` } })
      expect(r.status).toBe(200)
      expect(r.headers.get('x-pab-charged')).toBe('3')
      expect(five.t.fake.seen.at(-1)!.headers['authorization']).toBe(`Bearer ${OWNER_OPENAI_KEY}`)
    } finally {
      five.t.fake.handler = five.llm.handler
    }
    expect(await balance(five, a.token)).toBe(497)
  })
})

describe("the owner's lane at 0 %", () => {
  test('charges nothing, shows model and tokens, and counts each call against the daily request cap', async () => {
    const a = await zero.t.signup()
    await vaultKey(zero.t, a.token, OWNER_OPENAI_KEY, 'openai')
    await vaultKey(zero.t, a.token, OWNER_ANTHROPIC_KEY, 'anthropic')
    const from = zero.t.fake.seen.length
    const { ids, reserved } = await callsOfEveryKind(zero, a.token)
    expect(reserved).toEqual([0, 0, 0, 0, 0, 0])
    expect(keysSeen(zero, from)).toEqual([...Array(4).fill(`Bearer ${OWNER_OPENAI_KEY}`), OWNER_ANTHROPIC_KEY, OWNER_ANTHROPIC_KEY])
    for (const [i, id] of ids.entries()) {
      const d = await detail(zero, a.token, id)
      expect(d.body).toMatchObject({ model: i < 4 ? 'gpt-fee' : 'claude-fee', tokens: i < 4 ? GPT_USAGE : CLAUDE_USAGE, reserved: 0, charged: 0, outcome: 'ok' })
    }
    expect(await balance(zero, a.token)).toBe(500)
    // Six calls used the cap of six: the seventh is refused before the provider.
    const before = zero.t.fake.seen.length
    const over = await fetch(`${zero.base}/proxy/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-fee', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(over.status).toBe(429)
    expect(await over.json()).toMatchObject({ error: 'REQUEST_CAP_REACHED', cap: REQUEST_CAP, used: REQUEST_CAP })
    expect(zero.t.fake.seen.length).toBe(before)
    await checkRedisInvariant(zero.t, a.account_id)
    await assertLedger(stores(zero), [{ account: a.account_id, balance: 500, debits: ids }])
  })

  test('the house lane of the same deployment still charges the full cost and counts no request', async () => {
    const a = await zero.t.signup()
    zero.llm.usage = GPT_USAGE
    for (let i = 0; i < REQUEST_CAP + 1; i++) await openai(zero, a.token).chat.completions.create({ model: 'gpt-fee', max_tokens: 1000, messages: gptPrompt })
    const { charged } = chargesOf(Array(REQUEST_CAP + 1).fill(costMicro(GPT_FEE, GPT_USAGE)))
    const spent = charged.reduce((x, y) => x + y, 0)
    expect(await eventually(() => balance(zero, a.token), (b) => b === 500 - spent)).toBe(500 - spent)
  })

  test('model allowlists still apply, and an unpriced model is still refused (field model)', async () => {
    const a = await zero.t.signup()
    await vaultKey(zero.t, a.token, OWNER_OPENAI_KEY, 'openai')
    const ag = await zero.t.req('POST', '/v1/agents', { token: a.token, body: { name: 'narrow', allowlist: ['proxy:openai/gpt-other'] } })
    expect(ag.status).toBe(201)
    const before = zero.t.fake.seen.length
    const chat = (token: string, model: string) =>
      fetch(`${zero.base}/proxy/openai/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
      })
    const denied = await chat(ag.body.token, 'gpt-fee')
    expect(denied.status).toBe(403)
    expect(await denied.json()).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_allowlist' })
    const allowed = await openai(zero, ag.body.token).chat.completions.create({ model: 'gpt-other', max_tokens: 10, messages: gptPrompt })
    expect(allowed.choices[0]!.message.content).toBeTruthy()
    expect(zero.t.fake.seen.at(-1)!.headers['authorization']).toBe(`Bearer ${OWNER_OPENAI_KEY}`)
    const unpriced = await chat(a.token, 'gpt-unlisted')
    expect(unpriced.status).toBe(400)
    expect(await unpriced.json()).toMatchObject({ error: 'BAD_REQUEST', field: 'model' })
    expect(zero.t.fake.seen.length).toBe(before + 1)
  })
})

test('/llms-full.txt tells the caller what the owner’s lane is charged', async () => {
  expect((await five.t.req('GET', '/llms-full.txt')).text).toContain('With your own vaulted key for openai (POST /v1/keys/link) the provider bills you, and a metered call is charged 5 % of the exact cost above')
  expect((await zero.t.req('GET', '/llms-full.txt')).text).toContain('With your own vaulted key for anthropic (POST /v1/keys/link) the provider bills you, and a metered call is not charged')
})

test('the clamp weighs the fee: the largest ceiling whose fee reservation fits, on the owner’s lane', async () => {
  const a = await five.t.signup()
  await vaultKey(five.t, a.token, OWNER_OPENAI_KEY, 'openai')
  five.llm.usage = { input: 10, cached: 0, output: 100 }
  const body = JSON.stringify({ model: 'gpt-dear', messages: [{ role: 'user', content: 'hi' }] })
  const r = await fetch(`${five.base}/proxy/openai/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' }, body })
  expect(r.status).toBe(200)
  await r.text()
  const bytes = Buffer.byteLength(body)
  const fee = (out: number) => Math.ceil(((Math.ceil((bytes * 150 + out * 4_000_000) / 1e6) + 1) * 5) / 100)
  const clamped = Number(r.headers.get('x-pab-max-tokens-clamped'))
  // The largest that fits in 500 credits at 5 %: twenty times what the house lane's 500 credits buy.
  expect(fee(clamped)).toBeLessThanOrEqual(500)
  expect(fee(clamped + 1)).toBeGreaterThan(500)
  expect(clamped).toBeGreaterThan(2000)
  expect(Number(r.headers.get('x-pab-reserved'))).toBe(fee(clamped))
  expect(JSON.parse(five.t.fake.seen.at(-1)!.body).max_completion_tokens).toBe(clamped)
})
