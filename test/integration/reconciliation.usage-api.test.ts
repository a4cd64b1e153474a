/**
 * The usage API readers (src/provider-bill/openai-usage.ts, anthropic-usage.ts) against the fake
 * usage APIs on loopback: every page read, buckets of other days left out, embeddings counted,
 * the providers' meanings brought to ours (docs/api.md §13d), and a timeout-free refusal read as
 * unavailable.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { anthropicUsage } from '../../src/provider-bill/anthropic-usage'
import { openaiUsage } from '../../src/provider-bill/openai-usage'
import { utcDay, UsageUnavailable } from '../../src/provider-bill/usage-api'
import { createUsageApiFake } from '../fakes/usage-api'
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream'

let fake: FakeUpstream
const usage = createUsageApiFake()
const DAY = '2026-06-01'

beforeAll(() => {
  fake = startFakeUpstream()
  fake.handler = (req, seen) => usage.handle(req, seen) ?? new Response('not found', { status: 404 })
})
afterAll(() => fake.stop())

const provider = (dialect: 'openai' | 'anthropic') => ({ id: dialect, dialect, baseUrl: fake.url, adminKey: usage.adminKeys[dialect] })

test('OpenAI: completions and embeddings, page after page, cached tokens out of input', async () => {
  usage.usage.openai = {
    [DAY]: { 'gpt-a': { input: 100, cached: 40, output: 7 }, 'gpt-b': { input: 5, cached: 0, output: 1 }, 'embed-x': { input: 900, cached: 0, output: 0 } },
    '2026-06-02': { 'gpt-a': { input: 1, cached: 1, output: 1 } },
  }
  const before = usage.requests.length
  const got = await openaiUsage(provider('openai'), utcDay(DAY))
  expect(Object.fromEntries(got)).toEqual({ 'gpt-a': { input: 100, cached: 40, output: 7 }, 'gpt-b': { input: 5, cached: 0, output: 1 }, 'embed-x': { input: 900, cached: 0, output: 0 } })
  // Two completions pages and one embeddings page.
  expect(usage.requests.length - before).toBe(3)
})

test('Anthropic: the cache writes are input, the reads are cached', async () => {
  usage.usage.anthropic = { [DAY]: { 'claude-a': { input: 1000, cached: 30, output: 9 }, 'claude-b': { input: 10, cached: 0, output: 2 } } }
  const got = await anthropicUsage(provider('anthropic'), utcDay(DAY))
  expect(Object.fromEntries(got)).toEqual({ 'claude-a': { input: 1000, cached: 30, output: 9 }, 'claude-b': { input: 10, cached: 0, output: 2 } })
})

test('Anthropic: cache writes spelled flat are read as well', async () => {
  const inner = fake.handler!
  const start = `${DAY}T00:00:00Z`
  fake.handler = () =>
    Response.json({ data: [{ starting_at: start, ending_at: '2026-06-02T00:00:00Z', results: [{ model: 'claude-a', uncached_input_tokens: 7, cache_read_input_tokens: 3, cache_creation_5m_input_tokens: 2, cache_creation_1h_input_tokens: 1, output_tokens: 4 }] }], has_more: false, next_page: null })
  try {
    expect((await anthropicUsage(provider('anthropic'), utcDay(DAY))).get('claude-a')).toEqual({ input: 10, cached: 3, output: 4 })
  } finally {
    fake.handler = inner
  }
})

test('a bucket of another day is left out', async () => {
  const inner = fake.handler!
  fake.handler = () =>
    Response.json({
      object: 'page',
      data: [
        { object: 'bucket', start_time: utcDay(DAY).startS - 86_400, end_time: utcDay(DAY).startS, results: [{ model: 'gpt-a', input_tokens: 50, input_cached_tokens: 0, output_tokens: 5 }] },
        { object: 'bucket', start_time: utcDay(DAY).startS, end_time: utcDay(DAY).endS, results: [{ model: 'gpt-a', input_tokens: 3, input_cached_tokens: 1, output_tokens: 2 }] },
      ],
      has_more: false,
      next_page: null,
    })
  try {
    const got = await openaiUsage(provider('openai'), utcDay(DAY))
    // Counted once per endpoint: completions and embeddings both answered with the same page.
    expect(got.get('gpt-a')).toEqual({ input: 4, cached: 2, output: 4 })
  } finally {
    fake.handler = inner
  }
})

test('a refused connection and a 5xx are UsageUnavailable', async () => {
  await expect(openaiUsage({ ...provider('openai'), baseUrl: 'http://127.0.0.1:1' }, utcDay(DAY))).rejects.toBeInstanceOf(UsageUnavailable)
  usage.down = 502
  try {
    await expect(anthropicUsage(provider('anthropic'), utcDay(DAY))).rejects.toThrow('HTTP 502')
  } finally {
    usage.down = null
  }
})
