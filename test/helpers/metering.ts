/** A metered OpenAI/Anthropic-like catalog on the fake upstream, and §7's formula written independently. */
import fc from 'fast-check'
import type { Principal } from '../../src/auth/principal'
import { openPaidCall } from '../../src/paid-request'
import type { Services } from '../../src/services'
import { createLlmFake, type LlmFake } from '../fakes/llm'
import { startTestApp, type TestApp } from './harness'
import { llmCatalog, OPENAI_HOUSE_KEY } from './proxy'
import { vaultEnv } from './vault'

export const GPT = { input: 150, cached_input: 75, output: 600, max_output: 16384 }
export const CLAUDE = { input: 3000, cached_input: 300, cache_write: 3750, cache_write_1h: 6000, output: 15000, max_output: 8192 }
export const EMBED = { input: 20, output: 0, max_output: 1 }
/** A model whose images cost more than IMAGE_TOKENS_BOUND (as gpt-4o-mini's do): its own bound. */
export const PIXELS = { input: 150, output: 600, max_output: 4096, image_tokens: 50_000 }
/** Pricey enough that a 500-credit signup cannot reserve its max_output: the clamp's model. */
export const BIG = { input: 1000, output: 100_000, max_output: 32768 }
/** So pricey that fewer than min_output tokens fit in 500 credits. */
export const HUGE = { input: 1000, output: 40_000_000, max_output: 1000 }

export function meteredCatalog(fakeUrl: string) {
  const c = llmCatalog(fakeUrl) as any
  c.prices_as_of = '2025-06-01'
  c.providers.openai.proxy.metered = {
    dialect: 'openai',
    routes: ['/v1/chat/completions', '/v1/responses', '/v1/embeddings'],
    min_output: 16,
    models: { 'gpt-test': GPT, 'gpt-test-mini': { input: 15, output: 60, max_output: 4096 }, 'embed-test': EMBED, 'gpt-big': BIG, 'gpt-huge': HUGE, 'gpt-pixels': PIXELS },
  }
  c.capabilities = [
    {
      slug: 'llm.test.chat',
      provider: 'openai',
      lane: 'house',
      price: 0,
      metered: true,
      method: 'POST',
      path: '/v1/chat/completions',
      timeout_ms: 5000,
      description: 'metered chat completion',
      params: { type: 'object', required: ['model', 'messages'], properties: { model: { type: 'string' }, messages: { type: 'array' } } },
    },
  ]
  // Anthropic is a byok provider: every call is on the owner's lane. At 100 % its fee is the whole
  // cost, so the metering tests that use it check the house lane's arithmetic on it unchanged
  // (the fee itself: test/http/proxy.byok-fee.happy.test.ts).
  c.providers.anthropic.proxy.metered = { dialect: 'anthropic', routes: ['/v1/messages'], min_output: 16, byok_fee_pct: 100, models: { 'claude-test': CLAUDE } }
  return c
}

export interface Price {
  input: number
  cached_input?: number
  cache_write?: number
  cache_write_1h?: number
  output: number
}

const writePrice = (p: Price) => p.cache_write ?? p.input
const write1hPrice = (p: Price) => p.cache_write_1h ?? writePrice(p)

/** Exact cost in micro-credits (docs/api.md §7, and the cache writes priced apart: docs/metering.md). */
export const costMicro = (p: Price, t: { input: number; cached: number; output: number; cache_write?: number; cache_write_1h?: number }) =>
  t.input * p.input + t.cached * (p.cached_input ?? p.input) + t.output * p.output + (t.cache_write ?? 0) * writePrice(p) + (t.cache_write_1h ?? 0) * write1hPrice(p)

/**
 * The reservation of a request whose input bound is `bytes` and output ceiling `maxOut`; each input
 * token at the most one can cost (a cache write may cost more than input: Anthropic's models).
 */
export const reservation = (p: Price, bytes: number, maxOut: number) =>
  Math.ceil((bytes * Math.max(p.input, writePrice(p), write1hPrice(p)) + maxOut * p.output) / 1e6) + 1

/** Charges of successive settles from remainder 0: [charged…] and the final remainder. */
export function chargesOf(costs: number[], r = 0): { charged: number[]; r: number } {
  const charged: number[] = []
  for (const c of costs) {
    const n = Math.floor((r + c) / 1e6)
    charged.push(n)
    r = r + c - n * 1e6
  }
  return { charged, r }
}

/**
 * A metered call opened in process, with no upstream (model `m` on proxy:openai): the reservation
 * for `inputBound` input tokens and an output ceiling of `ceiling`, at prices per 1M tokens `p`.
 * Settle it with `call.settle('ok', { usage: { tokens, source } })`.
 */
export async function openMeteredCall(
  s: Services,
  principal: Principal,
  p: { input: number; cachedInput: number; output: number; boundInput?: number; cacheWrite?: number; cacheWrite1h?: number },
  o: { inputBound?: number; ceiling?: number; idempotencyKey?: string } = {},
) {
  const ceiling = o.ceiling ?? 1000
  const opened = await openPaidCall(s, {
    principal,
    target: 'proxy:openai/m',
    price: 0,
    unpriced: false,
    lease: true,
    idempotency: o.idempotencyKey ? { key: o.idempotencyKey, fingerprint: 'f' } : undefined,
    metered: { model: 'm', inputBound: o.inputBound ?? 1000, ...p, ceiling, maxOutput: ceiling, minOutput: 1 },
  })
  if (opened.kind !== 'debited') throw new Error('replay')
  return opened.call
}

/** A metered call of `model` on proxy:openai at gpt-test's prices, opened in process, not yet settled. */
export async function openModelCall(s: Services, principal: Principal, model = 'gpt-test') {
  const opened = await openPaidCall(s, {
    principal,
    target: `proxy:openai/${model}`,
    price: 0,
    unpriced: false,
    lease: true,
    metered: { model, inputBound: 10_000, input: 150, cachedInput: 75, output: 600, ceiling: 4000, maxOutput: 4000, minOutput: 1 },
  })
  if (opened.kind !== 'debited') throw new Error('replay')
  return opened.call
}


/**
 * A test app on the metered catalog (house keys set, the vault on), its fake upstream answering as
 * the LLM fake, listening on loopback for the SDKs: `base` is its URL. `env` adds to the app's.
 */
export async function startMeteredApp(env: Record<string, string> = {}): Promise<{ t: TestApp; llm: LlmFake; base: string }> {
  const t = await startTestApp({ catalog: meteredCatalog, env: { ...vaultEnv(), OPENAI_TEST_KEY: OPENAI_HOUSE_KEY, ...env } })
  const llm = createLlmFake()
  t.fake.handler = llm.handler
  return { t, llm, base: await t.listen() }
}

/**
 * A model's token prices for property tests: a cached token never costs more than an input one (the
 * catalog refuses such a price), so the input bound covers input and cached tokens alike.
 */
export const tokenPrices = (maxOutput = 10_000) =>
  fc
    .record({ input: fc.integer({ min: 0, max: 10_000 }), cachedShare: fc.integer({ min: 0, max: 100 }), output: fc.integer({ min: 0, max: maxOutput }) })
    .map((p) => ({ input: p.input, cachedInput: Math.floor((p.input * p.cachedShare) / 100), output: p.output }))

/**
 * A JSON object's text from its members, built by hand so that a key can appear twice, as a
 * provider's bytes could; `pretty` indents as JSON.stringify(…, null, 2) would.
 */
export const renderMembers = (entries: [string, unknown][], pretty: boolean) => {
  const sep = pretty ? ',\n  ' : ','
  const body = entries.map(([k, v]) => `${JSON.stringify(k)}:${pretty ? ' ' : ''}${JSON.stringify(v, null, pretty ? 2 : undefined)}`).join(sep)
  return pretty ? `{\n  ${body}\n}\n` : `{${body}}`
}

/** `bytes` cut at the given offsets (each taken modulo its length + 1): how a network may chunk an answer. */
export function cutBytes(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const at = [...new Set(cuts.map((c) => c % (bytes.byteLength + 1)))].sort((a, b) => a - b)
  const out: Uint8Array[] = []
  let from = 0
  for (const c of [...at, bytes.byteLength]) {
    out.push(bytes.slice(from, c))
    from = c
  }
  return out
}
