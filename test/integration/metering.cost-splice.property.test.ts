/**
 * Property (docs/api.md §7, the cost in the answer): a meter that writes the cost adds exactly two
 * members to the usage object the client gets and changes no other byte, however the answer is
 * cut into chunks. A JSON answer (members of any kind, `usage` anywhere, twice, nested, not an
 * object; compact or pretty-printed): the object JSON.parse keeps as `usage` gains `cost` and
 * `cost_details`, and taking the spliced text out again gives the provider's bytes. A stream (an
 * Anthropic message_delta, the Responses API's response.completed, an OpenAI chat usage chunk the
 * client asked for; \n or \r\n framed; texts that spell `"usage"` and what JSON escapes): the
 * provider's stream with the cost in that one usage object. The figure is §7's, written here
 * independently (test/helpers/metering.ts costMicro).
 */
import { expect, test } from 'bun:test'
import fc from 'fast-check'
import { costWriter } from '../../src/metering/cost'
import { JsonMeter, SseMeter } from '../../src/metering/meter'
import { costMicro, cutBytes, renderMembers } from '../helpers/metering'

const enc = new TextEncoder()
const CPU = 1000
const prices = fc.record({ input: fc.nat(20_000), cached_input: fc.nat(20_000), cache_write: fc.nat(30_000), cache_write_1h: fc.nat(30_000), output: fc.nat(80_000) })
type P = { input: number; cached_input: number; cache_write: number; cache_write_1h: number; output: number }
const writer = (p: P) => costWriter({ input: p.input, cachedInput: p.cached_input, output: p.output, cacheWrite: p.cache_write, cacheWrite1h: p.cache_write_1h }, CPU)
/** §7's members for these counts, as JSON.stringify writes them. */
const members = (p: P, t: { input: number; cached: number; output: number; cache_write?: number; cache_write_1h?: number }) => {
  const micro = costMicro(p, t)
  return { cost: micro / 1e6 / CPU, cost_details: { credits: `${Math.floor(micro / 1e6)}.${String(micro % 1e6).padStart(6, '0')}` } }
}
const membersText = (m: ReturnType<typeof members>) => JSON.stringify(m).slice(1, -1)

const cut = cutBytes
const cuts = fc.array(fc.nat(100_000), { maxLength: 12 })

const usage = fc.record({ prompt_tokens: fc.nat(1_000_000), completion_tokens: fc.nat(1_000_000), prompt_tokens_details: fc.record({ cached_tokens: fc.nat(1_000) }) })
const scalar = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 12 }), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(null, true, false, '"usage":{}', '\\'))
const key = fc.oneof(fc.constantFrom('id', 'model', 'choices', 'data', 'metadata', 'usage_', 'us\u00e6ge'), fc.string({ maxLength: 6 }))
const anyValue = fc.oneof(scalar, fc.jsonValue({ maxDepth: 3 }), usage, fc.record({ usage }), fc.constantFrom({}, [], 'usage'))

const render = renderMembers

test('a JSON answer, chunked anywhere: the usage JSON.parse keeps gains the cost, every other byte the provider\'s', () => {
  fc.assert(
    fc.property(prices, fc.array(fc.tuple(key, anyValue), { maxLength: 6 }), fc.array(usage, { maxLength: 2 }), fc.nat(), fc.boolean(), cuts, (p, rest, us, at, pretty, cs) => {
      const entries: [string, unknown][] = [...rest]
      for (const u of us) entries.splice(at % (entries.length + 1), 0, ['usage', u])
      const text = render(entries, pretty)
      const m = new JsonMeter('chat', writer(p))
      const out: Uint8Array[] = cut(enc.encode(text), cs).map((c) => m.push(c))
      out.push(m.flush())
      const got = Buffer.concat(out).toString('utf8')
      const parsed = JSON.parse(text) as Record<string, unknown>
      const u = parsed.usage
      if (!u || typeof u !== 'object' || Array.isArray(u)) {
        expect(got).toBe(text)
        return
      }
      const t = m.usage()!
      const added = membersText(members(p, t))
      expect(JSON.parse(got)).toEqual({ ...parsed, usage: { ...u, ...members(p, t) } })
      // Exactly one splice: the members (with their comma unless the object was empty), nothing else moved.
      const i = got.indexOf(added)
      expect(i).toBeGreaterThan(0)
      const withComma = got[i - 1] === ',' && got.slice(0, i - 1) + got.slice(i + added.length) === text
      const bare = got.slice(0, i) + got.slice(i + added.length) === text
      expect(withComma || bare).toBe(true)
    }),
    { numRuns: 3000 },
  )
})

const text = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 10 }), fc.constantFrom('"', '\\', '\n', '\u0001', 'é', '\u{1F600}', '"usage":{"a":1}', '}'))
const tokens = fc.record({ input: fc.nat(100_000), cached: fc.nat(100_000), written: fc.nat(1_000), output: fc.nat(100_000) })
const event = (type: string, data: Record<string, unknown>, named: boolean) => `${named ? `event: ${type}\n` : ''}data: ${JSON.stringify({ type, ...data })}\n\n`

/** A stream of `kind` for these counts and texts, with (`m`) or without the cost in its usage object. */
function stream(kind: 'messages' | 'responses' | 'chat', t: { input: number; cached: number; written: number; output: number }, texts: string[], m: object | null): string {
  const cost = (u: object) => (m ? { ...u, ...m } : u)
  if (kind === 'messages') {
    const start = { input_tokens: t.input, cache_creation_input_tokens: t.written, cache_read_input_tokens: t.cached, output_tokens: 1 }
    let s = event('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-test', content: [], usage: start } }, true)
    for (const x of texts) s += event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: x } }, true)
    s += event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: cost({ output_tokens: t.output }) }, true)
    return s + event('message_stop', {}, true)
  }
  if (kind === 'responses') {
    let s = event('response.created', { response: { id: 'r', status: 'in_progress', usage: null } }, true)
    for (const x of texts) s += event('response.output_text.delta', { delta: x }, true)
    const u = { input_tokens: t.input + t.cached, input_tokens_details: { cached_tokens: t.cached }, output_tokens: t.output }
    return s + event('response.completed', { response: { id: 'r', status: 'completed', output: texts.join(''), usage: cost(u), metadata: {} } }, true)
  }
  const chunk = (choices: unknown[], u: unknown) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices, usage: u, obfuscation: 'x9' })}\n\n`
  const u = { prompt_tokens: t.input + t.cached, completion_tokens: t.output, prompt_tokens_details: { cached_tokens: t.cached } }
  return texts.map((x) => chunk([{ index: 0, delta: { content: x } }], null)).join('') + chunk([], cost(u)) + 'data: [DONE]\n\n'
}

test('a stream, chunked anywhere: the provider\'s stream with the cost in the usage object the client gets', () => {
  fc.assert(
    fc.property(
      prices,
      tokens,
      fc.array(text, { maxLength: 6 }),
      cuts,
      fc.boolean(),
      fc.constantFrom('messages', 'responses', 'chat') as fc.Arbitrary<'messages' | 'responses' | 'chat'>,
      (p, t, texts, cs, crlf, kind) => {
        const frame = (s: string) => (crlf ? s.replaceAll('\n', '\r\n') : s)
        // The counts the settle reads: cache writes only on Anthropic, input apart from cached tokens.
        const counts = { input: t.input, cached: t.cached, output: t.output, ...(kind === 'messages' && t.written > 0 ? { cache_write: t.written } : {}) }
        const m = new SseMeter(kind, false, writer(p))
        const out = cut(enc.encode(frame(stream(kind, t, texts, null))), cs).map((c) => m.push(c))
        out.push(m.flush())
        expect(m.usage()).toEqual(counts)
        expect(Buffer.concat(out).toString('utf8')).toBe(frame(stream(kind, t, texts, members(p, counts))))
      },
    ),
    { numRuns: 2000 },
  )
})

test('a chat stream whose usage the proxy asked for: the client gets no usage and no cost', () => {
  fc.assert(
    fc.property(prices, tokens, fc.array(text, { maxLength: 6 }), cuts, (p, t, texts, cs) => {
      const m = new SseMeter('chat', true, writer(p))
      const out = cut(enc.encode(stream('chat', t, texts, null)), cs).map((c) => m.push(c))
      out.push(m.flush())
      const got = Buffer.concat(out).toString('utf8')
      expect(got).not.toContain('"cost"')
      expect(got).not.toContain('"usage"')
    }),
    { numRuns: 500 },
  )
})
