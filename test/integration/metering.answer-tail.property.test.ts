/**
 * Property (docs/api.md §7): the usage of a plain JSON answer read from its last bytes (answer-tail.ts)
 * is what parsing the whole answer reads, or the reader declines — never another value. For any
 * answer (members of any kind, `usage` anywhere or twice or nested, compact or pretty-printed, cut
 * into chunks anywhere) it agrees with JSON.parse; for the shapes providers send (usage followed by
 * scalar members only: OpenAI chat's service_tier and system_fingerprint, embeddings and Anthropic
 * with usage last) it does not decline.
 */
import { expect, test } from 'bun:test'
import fc from 'fast-check'
import { cutBytes, renderMembers } from '../helpers/metering'
import { usageFromEnd } from '../../src/metering/answer-tail'

const enc = new TextEncoder()
const usage = fc.record({ prompt_tokens: fc.nat(), completion_tokens: fc.nat(), prompt_tokens_details: fc.record({ cached_tokens: fc.nat(), audio_tokens: fc.nat() }) })
const scalar = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 12 }), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(null, true, false))
const key = fc.oneof(fc.constantFrom('id', 'model', 'service_tier', 'system_fingerprint', 'choices', 'data', 'type', 'usage_', 'us\u00e6ge'), fc.string({ maxLength: 6 }))
const anyValue = fc.oneof(scalar, fc.jsonValue({ maxDepth: 3 }), usage, fc.constant('usage'), fc.record({ usage }))

const chunked = (text: string, cuts: number[]) => cutBytes(enc.encode(text), cuts)

const render = renderMembers

test('read from the end: the whole parse\'s usage, or declined', () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(key, anyValue), { maxLength: 6 }), fc.option(usage, { nil: null }), fc.nat(), fc.boolean(), fc.array(fc.nat(100_000), { maxLength: 6 }), (members, u, at, pretty, cuts) => {
      const entries: [string, unknown][] = [...members]
      if (u) entries.splice(at % (entries.length + 1), 0, ['usage', u])
      const text = render(entries, pretty)
      const read = usageFromEnd(chunked(text, cuts))
      if (read !== undefined) expect(read).toEqual((JSON.parse(text) as { usage: {} | null }).usage)
    }),
    { numRuns: 3000 },
  )
})

test('the shapes providers send are read from the end', () => {
  fc.assert(
    fc.property(usage, fc.array(fc.tuple(fc.constantFrom('service_tier', 'system_fingerprint', 'x'), scalar.filter((v) => typeof v !== 'string' || !/["\\\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(v))), { maxLength: 3 }), fc.boolean(), fc.array(fc.nat(100_000), { maxLength: 6 }), (u, after, pretty, cuts) => {
      const choices = [{ index: 0, message: { role: 'assistant', content: 'a "usage": {"prompt_tokens": 1} }' }, finish_reason: 'stop' }]
      const entries: [string, unknown][] = [['id', 'chatcmpl-1'], ['object', 'chat.completion'], ['choices', choices], ['usage', u], ...after]
      const text = render(entries, pretty)
      expect(usageFromEnd(chunked(text, cuts))).toEqual(u)
    }),
    { numRuns: 1000 },
  )
})

test('a later usage member spelt with an escape, which JSON.parse reads instead: declined', () => {
  const answer = (later: string) => [enc.encode(`{"choices":[],"usage":{"prompt_tokens":1},"us\\u0061ge":${later}}`)]
  expect(usageFromEnd(answer('5'))).toBeUndefined()
  expect(usageFromEnd(answer('{"prompt_tokens":2}'))).toBeUndefined()
  // And a nested usage that closes before the answer's end, or an answer that does not end: declined.
  expect(usageFromEnd([enc.encode('{"meta":{"usage":{"prompt_tokens":1}}}')])).toBeUndefined()
  expect(usageFromEnd([enc.encode('{"choices":[],"usage":{"prompt_tokens":1}')])).toBeUndefined()
})
