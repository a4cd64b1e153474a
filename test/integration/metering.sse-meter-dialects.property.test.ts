/**
 * Property (docs/api.md §7), for the two streams the proxy never rewrites: an Anthropic messages stream
 * and an OpenAI Responses stream, cut into chunks anywhere (inside events, inside multi-byte
 * characters, inside "\r\n\r\n"), reach the client byte for byte, and the usage read is the
 * provider's: Anthropic's input side from message_start unless the last message_delta repeats a
 * field of it (a null or absent one keeps message_start's), its output from that message_delta,
 * the Responses API's from response.completed. Texts hold what JSON escapes (quotes, backslashes,
 * control characters as \u00XX) and characters of every UTF-8 length.
 */
import { expect, test } from 'bun:test'
import fc from 'fast-check'
import { SseMeter } from '../../src/metering/meter'

const enc = new TextEncoder()

const tokens = fc.record({ input: fc.nat(100_000), written: fc.nat(1_000), cached: fc.nat(100_000), output: fc.nat(100_000) })
const text = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 10 }), fc.constantFrom('"', '\\', '\n', '\u0001', 'é', '€', '\u{1F600}', 'usage', '"usage"'))
const cuts = fc.array(fc.nat(100_000), { maxLength: 16 })

const event = (type: string, data: Record<string, unknown>, named: boolean) => `${named ? `event: ${type}\n` : ''}data: ${JSON.stringify({ type, ...data })}\n\n`

/**
 * The shapes message_delta's cumulative usage comes in: output only (older API versions), every
 * field repeated, the input fields null (MessageDeltaUsage declares them nullable), or input_tokens
 * alone repeated. A field absent or null keeps message_start's.
 */
const DELTA_SHAPES = ['output', 'repeated', 'nulls', 'input-only'] as const
type DeltaShape = (typeof DELTA_SHAPES)[number]

function deltaUsage(t: { input: number; written: number; cached: number; output: number }, shape: DeltaShape): Record<string, unknown> {
  const output_tokens = t.output
  if (shape === 'repeated') return { input_tokens: t.input, cache_creation_input_tokens: t.written, cache_read_input_tokens: t.cached, output_tokens }
  if (shape === 'nulls') return { input_tokens: null, cache_creation_input_tokens: null, cache_read_input_tokens: null, output_tokens }
  if (shape === 'input-only') return { input_tokens: t.input, output_tokens }
  return { output_tokens }
}

function anthropic(t: { input: number; written: number; cached: number; output: number }, texts: string[], pings: boolean, shape: DeltaShape): string {
  const usage = { input_tokens: t.input, cache_creation_input_tokens: t.written, cache_read_input_tokens: t.cached, output_tokens: 1 }
  let s = event('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-test', content: [], stop_reason: null, usage } }, true)
  s += event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }, true)
  for (const x of texts) {
    if (pings) s += event('ping', {}, true)
    s += event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: x } }, true)
  }
  s += event('content_block_stop', { index: 0 }, true)
  s += event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: deltaUsage(t, shape) }, true)
  return s + event('message_stop', {}, true)
}

function responses(t: { input: number; cached: number; output: number }, texts: string[], named: boolean): string {
  const base = { id: 'resp_1', object: 'response', model: 'gpt-test', output: [] }
  let s = event('response.created', { response: { ...base, status: 'in_progress', usage: null } }, named)
  s += event('response.in_progress', { response: { ...base, status: 'in_progress', usage: null } }, named)
  for (const x of texts) s += event('response.output_text.delta', { item_id: 'msg_1', output_index: 0, content_index: 0, delta: x }, named)
  const usage = { input_tokens: t.input + t.cached, input_tokens_details: { cached_tokens: t.cached }, output_tokens: t.output, total_tokens: t.input + t.cached + t.output }
  return s + event('response.completed', { response: { ...base, status: 'completed', output: texts.join(''), usage } }, named)
}

function through(kind: 'messages' | 'responses', raw: string, at: number[], crlf: boolean) {
  const bytes = enc.encode(crlf ? raw.replaceAll('\n', '\r\n') : raw)
  const m = new SseMeter(kind, false)
  const out: Uint8Array[] = []
  let from = 0
  for (const c of [...new Set(at.map((x) => x % (bytes.byteLength + 1)))].sort((a, b) => a - b).concat(bytes.byteLength)) {
    out.push(m.push(bytes.slice(from, c)))
    from = c
  }
  out.push(m.flush())
  return { same: Buffer.compare(Buffer.concat(out), Buffer.from(bytes)) === 0, usage: m.usage(), failedBeforeOutput: m.failedBeforeOutput() }
}

test('an Anthropic stream, chunked anywhere, its message_delta usage in any shape: byte for byte, the usage the provider reported', () => {
  fc.assert(
    fc.property(tokens, fc.array(text, { maxLength: 8 }), fc.boolean(), cuts, fc.boolean(), fc.constantFrom(...DELTA_SHAPES), (t, texts, pings, at, crlf, shape) => {
      const r = through('messages', anthropic(t, texts, pings, shape), at, crlf)
      expect(r.same).toBe(true)
      // Cache writes counted apart from input (priced apart: docs/metering.md), present only when there were any.
      expect(r.usage).toEqual({ input: t.input, cached: t.cached, output: t.output, ...(t.written > 0 ? { cache_write: t.written } : {}) })
    }),
    { numRuns: 1500 },
  )
})

test('a Responses stream, chunked anywhere: byte for byte, the usage of response.completed', () => {
  fc.assert(
    fc.property(tokens, fc.array(text, { maxLength: 8 }), fc.boolean(), cuts, fc.boolean(), (t, texts, named, at, crlf) => {
      const r = through('responses', responses(t, texts, named), at, crlf)
      expect(r.same).toBe(true)
      expect(r.usage).toEqual({ input: t.input, cached: t.cached, output: t.output })
    }),
    { numRuns: 1500 },
  )
})

test('a stream whose provider error comes before any output, chunked anywhere: byte for byte, failed before output; after output it is not', () => {
  fc.assert(
    fc.property(fc.array(text, { maxLength: 3 }), fc.nat(3), cuts, fc.boolean(), fc.constantFrom('messages', 'responses') as fc.Arbitrary<'messages' | 'responses'>, (texts, pings, at, crlf, kind) => {
      const error = event('error', { error: { type: 'overloaded_error', message: 'Overloaded' } }, true)
      const opening =
        kind === 'messages'
          ? event('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-test', content: [], usage: { input_tokens: 3, output_tokens: 1 } } }, true) +
            event('ping', {}, true).repeat(pings)
          : event('response.created', { response: { id: 'resp_1', status: 'in_progress', usage: null } }, true)
      const output = texts.map((x) =>
        kind === 'messages' ? event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: x } }, true) : event('response.output_text.delta', { item_id: 'i', output_index: 0, content_index: 0, delta: x }, true),
      )
      const r = through(kind, `: keepalive\n\n${opening}${output.join('')}${error}`, at, crlf)
      expect(r.same).toBe(true)
      expect(r.usage).toBeNull()
      expect(r.failedBeforeOutput).toBe(texts.length === 0)
    }),
    { numRuns: 1500 },
  )
})
