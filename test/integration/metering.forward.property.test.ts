/**
 * Property (docs/api.md §7): the body a metered route forwards is the request's, with the ceiling the
 * debit clamped to and the usage option written in — the same JSON value whether the fields were
 * added or replaced, whatever the request's spacing and members — and every other member as the
 * client wrote it (an int64 seed is not rounded by a second serialisation).
 */
import { expect, test } from 'bun:test'
import fc from 'fast-check'
import { forwardedBody, type MeteredRequest } from '../../src/metering/request'

const body = fc.record(
  {
    model: fc.constant('m'),
    stream: fc.boolean(),
    max_completion_tokens: fc.oneof(fc.integer({ min: 1, max: 1e6 }), fc.constant(null)),
    stream_options: fc.oneof(fc.constant(null), fc.record({ include_usage: fc.boolean() }, { requiredKeys: [] })),
    messages: fc.array(fc.record({ role: fc.constantFrom('user', 'system'), content: fc.string({ unit: 'grapheme' }) }), { maxLength: 3 }),
    extra: fc.jsonValue(),
  },
  { requiredKeys: [] },
)

test('spliced or re-serialised, the forwarded body is the request with the clamp and the usage option', () => {
  fc.assert(
    fc.property(body, fc.constantFrom(0, 1, 2, '\t'), fc.option(fc.integer({ min: 1, max: 1e6 }), { nil: null }), fc.boolean(), (b, indent, clampTo, injectUsage) => {
      // A member no double holds (an int64 seed): whatever the route writes in, it must reach the provider as written.
      const text = JSON.stringify(b, null, indent)
      const raw = ` {"seed": 12345678901234567890${text === '{}' ? '' : ','}${text.slice(1)}\n`
      const parsed = JSON.parse(raw) as Record<string, unknown>
      const r = { kind: 'chat', ceilingField: 'max_completion_tokens', body: parsed } as unknown as MeteredRequest
      const want: Record<string, unknown> = { ...parsed }
      if (clampTo !== null) want.max_completion_tokens = clampTo
      if (injectUsage) want.stream_options = { ...(want.stream_options as object | undefined), include_usage: true }
      const sent = forwardedBody(raw, r, { clampTo, injectUsage })
      expect(JSON.parse(sent)).toEqual(want)
      expect(sent).toContain('"seed": 12345678901234567890')
      if (clampTo === null && !injectUsage) expect(sent).toBe(raw)
    }),
    { numRuns: 1000 },
  )
})

test('an empty object gets the fields and nothing else', () => {
  const r = { kind: 'chat', ceilingField: 'max_completion_tokens', body: {} } as unknown as MeteredRequest
  expect(JSON.parse(forwardedBody(' { \n} ', r, { clampTo: 7, injectUsage: true }))).toEqual({ max_completion_tokens: 7, stream_options: { include_usage: true } })
  expect(JSON.parse(forwardedBody('{}', r, { clampTo: null, injectUsage: true }))).toEqual({ stream_options: { include_usage: true } })
})

test('a field written twice: the last one (the one JSON.parse keeps) is replaced, the rest kept as written', () => {
  const raw = '{"seed": 12345678901234567890, "max_completion_tokens": 5, "stream": true, "max_completion_tokens": null}'
  const r = { kind: 'chat', ceilingField: 'max_completion_tokens', body: JSON.parse(raw) } as unknown as MeteredRequest
  expect(forwardedBody(raw, r, { clampTo: 7, injectUsage: false })).toBe('{"seed": 12345678901234567890, "max_completion_tokens": 5, "stream": true, "max_completion_tokens": 7}')
})
