/**
 * Property (docs/api.md §7): an OpenAI chat stream, cut into chunks anywhere (inside events and inside
 * multi-byte characters), is metered the same as the whole: the usage read is the provider's; a
 * stream whose usage the client asked for itself reaches it byte for byte; one the proxy asked for
 * reaches it as it would have without the option (the usage-only chunk dropped, `usage: null` taken
 * out of every other chunk). Chunks cut at every event's end take the meter's undecoded fast path.
 */
import { expect, test } from 'bun:test'
import fc from 'fast-check'
import { SseMeter } from '../../src/metering/meter'

const enc = new TextEncoder()
const dec = new TextDecoder()

interface Stream {
  texts: string[]
  usage: { prompt: number; cached: number; completion: number } | null
  /** Every chunk carries `usage: null`, as the real API sends once the option is on. */
  usageNull: boolean
  /** OpenAI's `obfuscation` padding as every chunk's last member (after `usage`), or none. */
  obfuscation: string | null
  /** An event without data (a field we do not read) before each chunk: it may start with any character. */
  other: string | null
  /** Events end in \r\n\r\n instead of \n\n. */
  crlf: boolean
}

function frames(s: Stream): { raw: string; injectedView: string } {
  let raw = ''
  let view = ''
  for (const t of s.texts) {
    if (s.other !== null) {
      raw += `${s.other}\n\n`
      view += `${s.other}\n\n`
    }
    const o = { id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: t } }] }
    const pad = s.obfuscation === null ? {} : { obfuscation: s.obfuscation }
    raw += `data: ${JSON.stringify(s.usageNull ? { ...o, usage: null, ...pad } : { ...o, ...pad })}\n\n`
    view += `data: ${JSON.stringify({ ...o, ...pad })}\n\n`
  }
  if (s.usage) {
    const u = { prompt_tokens: s.usage.prompt + s.usage.cached, completion_tokens: s.usage.completion, prompt_tokens_details: { cached_tokens: s.usage.cached } }
    raw += `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', choices: [], usage: u, ...(s.obfuscation === null ? {} : { obfuscation: s.obfuscation }) })}\n\n`
  }
  raw += 'data: [DONE]\n\n'
  view += 'data: [DONE]\n\n'
  if (s.crlf) return { raw: raw.replaceAll('\n\n', '\r\n\r\n'), injectedView: view.replaceAll('\n\n', '\r\n\r\n') }
  return { raw, injectedView: view }
}

/** Byte offsets just past each event's blank line: chunks cut there are whole events (the meter's fast path). */
function eventEnds(bytes: Uint8Array): number[] {
  const ends: number[] = []
  for (let i = 1; i < bytes.byteLength; i++) if (bytes[i] === 0x0a && (bytes[i - 1] === 0x0a || (bytes[i - 1] === 0x0d && bytes[i - 2] === 0x0a))) ends.push(i + 1)
  return ends
}

function meter(bytes: Uint8Array, cuts: number[], strip: boolean, atEvents = false) {
  const m = new SseMeter('chat', strip)
  const at = [...new Set([...cuts.map((c) => c % (bytes.byteLength + 1)), ...(atEvents ? eventEnds(bytes) : [])])].sort((a, b) => a - b)
  const out: Uint8Array[] = []
  let from = 0
  for (const c of [...at, bytes.byteLength]) {
    out.push(m.push(bytes.slice(from, c)))
    from = c
  }
  out.push(m.flush())
  return { out: Buffer.concat(out), usage: m.usage() }
}

const stream = fc.record({
  texts: fc.array(fc.string({ unit: 'grapheme', maxLength: 12 }), { maxLength: 8 }),
  usage: fc.option(fc.record({ prompt: fc.nat(10_000), cached: fc.nat(10_000), completion: fc.nat(10_000) }), { nil: null }),
  usageNull: fc.boolean(),
  obfuscation: fc.option(fc.stringMatching(/^[A-Za-z0-9]{0,12}$/), { nil: null }),
  other: fc.option(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 3 }).filter((x) => !/[\r\n]/.test(x) && !x.startsWith('data:')), { nil: null }),
  crlf: fc.boolean(),
})
const cuts = fc.array(fc.nat(100_000), { maxLength: 12 })

test('chunked anywhere: the usage is the provider\'s and the client gets the stream it asked for', () => {
  fc.assert(
    fc.property(stream, cuts, fc.boolean(), fc.boolean(), (s, c, strip, atEvents) => {
      const { raw, injectedView } = frames(s)
      const bytes = enc.encode(raw)
      const r = meter(bytes, c, strip, atEvents)
      expect(r.usage).toEqual(s.usage ? { input: s.usage.prompt, cached: s.usage.cached, output: s.usage.completion } : null)
      if (strip) expect(dec.decode(r.out)).toBe(injectedView)
      else expect(Buffer.compare(r.out, Buffer.from(bytes))).toBe(0)
    }),
    {
      numRuns: 2000,
      // Found by this property: a cut inside a character that opens an event, then a chunk passed as its own bytes.
      examples: [[{ texts: ['a'], usage: null, usageNull: false, obfuscation: null, other: '\u{10000}\u{10000}', crlf: false }, [2, 10], false, false]],
    },
  )
})

test('the usage option\'s `"usage":null` is taken out of the provider\'s own bytes, the rest kept as sent', () => {
  // Compact JSON, as OpenAI sends it, but not as JSON.stringify would write it again (1.50, no space after data:).
  const chunk = (content: string, end: string) => `data:{"id":"c","choices":[{"index":0,"delta":{"content":"${content}"}}],"t":1.50,"usage":null}${end}`
  const without = (content: string, end: string) => `data:{"id":"c","choices":[{"index":0,"delta":{"content":"${content}"}}],"t":1.50}${end}`
  for (const end of ['\n\n', '\r\n\r\n']) {
    const m = new SseMeter('chat', true)
    // One chunk of two events, then one event alone, then the usage chunk and [DONE].
    expect(dec.decode(m.push(enc.encode(chunk('hé', end) + chunk('a,\\"usage\\":null}', end))))).toBe(without('hé', end) + without('a,\\"usage\\":null}', end))
    expect(dec.decode(m.push(enc.encode(chunk('b', end))))).toBe(without('b', end))
    expect(dec.decode(m.push(enc.encode(`data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}${end}data: [DONE]${end}`)))).toBe(`data: [DONE]${end}`)
    expect(m.usage()).toEqual({ input: 3, cached: 0, output: 2 })
  }
  // As OpenAI sends it today: the `obfuscation` padding after `usage`. And members that are not scalars after it: the parse decides.
  const padded = new SseMeter('chat', true)
  expect(dec.decode(padded.push(enc.encode('data:{"choices":[{"delta":{"content":"x"}}],"t":1.50,"usage":null,"obfuscation":"lRK2aBv"}\n\n')))).toBe('data:{"choices":[{"delta":{"content":"x"}}],"t":1.50,"obfuscation":"lRK2aBv"}\n\n')
  expect(dec.decode(padded.push(enc.encode('data: {"choices":[],"usage":null,"x":{"usage":1}}\n\n')))).toBe('data: {"choices":[],"x":{"usage":1}}\n\n')
  // A second `usage` after the injected one (JSON takes the last): both go, as the parse would have it.
  expect(dec.decode(padded.push(enc.encode('data: {"choices":[{"index":0}],"usage":null,"usage":5}\n\n')))).toBe('data: {"choices":[{"index":0}]}\n\n')
  // The same with the first `usage` before the injected one, through a chunk that does not start the event (the text's path).
  const split = new SseMeter('chat', true)
  expect(split.push(enc.encode('data: {"usage":{"prompt_tokens":3},"choices":[{"index":0}]')).byteLength).toBe(0)
  expect(dec.decode(split.push(enc.encode(',"usage":null,"obfuscation":"kJ"}\n\n')))).toBe('data: {"choices":[{"index":0}],"obfuscation":"kJ"}\n\n')
  // Written with JSON's optional spaces (Python's json.dumps): the member goes, the spacing stays.
  expect(dec.decode(padded.push(enc.encode('data: {"id": "c", "choices": [{"index": 0}], "usage": null, "obfuscation": "kJ"}\n\n')))).toBe('data: {"id": "c", "choices": [{"index": 0}], "obfuscation": "kJ"}\n\n')
  // A chunk without choices that is not the usage chunk (Azure's prompt filter results) is not dropped, by either path.
  expect(dec.decode(padded.push(enc.encode('data: {"choices":[],"usage":null}\n\n')))).toBe('data: {"choices":[]}\n\n')
  expect(padded.usage()).toBeNull()
  // A `"usage"` that is not the top-level object's own is left to the parse, which takes out the top-level one only.
  const m = new SseMeter('chat', true)
  expect(dec.decode(m.push(enc.encode('data: {"choices":[{"delta":{"usage":null}}],"usage":null}\n\n')))).toBe('data: {"choices":[{"delta":{"usage":null}}]}\n\n')
  // The parse's rewrite keeps the event's other lines where they were (an id: line after the data is the client's last event id).
  const withId = new SseMeter('chat', true)
  expect(dec.decode(withId.push(enc.encode('event: chunk\ndata: {"choices":[{"index":0}],"usage":null,"x":{}}\nid: 7\n\n')))).toBe('event: chunk\ndata: {"choices":[{"index":0}],"x":{}}\nid: 7\n\n')
})

test('`usage: null` anywhere among any members: the client gets the chunk without it, whichever path took it out', () => {
  const member = fc.tuple(
    fc.oneof(fc.constantFrom('obfuscation', 'id', 'x_1', 'usage_', 'Usage'), fc.string({ maxLength: 6 })),
    fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(null, true, false), fc.jsonValue({ maxDepth: 2 }), fc.constant({ usage: null }), fc.constant({ usage: { prompt_tokens: 1 } })),
  )
  fc.assert(
    fc.property(fc.array(member, { maxLength: 5 }), fc.nat(), fc.boolean(), fc.nat(), (members, at, crlf, cut) => {
      const rest = members.filter(([k]) => k !== 'usage' && k !== '__proto__')
      const entries: [string, unknown][] = [['choices', [{ index: 0, delta: { content: 'x' } }]], ...rest]
      entries.splice(1 + (at % entries.length), 0, ['usage', null])
      const end = crlf ? '\r\n\r\n' : '\n\n'
      const m = new SseMeter('chat', true)
      // Whole (the bytes' path), or cut once (a chunk that does not start an event: the text's path).
      const bytes = enc.encode(`data: ${JSON.stringify(Object.fromEntries(entries))}${end}data: [DONE]${end}`)
      const c = cut % (bytes.byteLength + 1)
      const out = dec.decode(Buffer.concat([m.push(bytes.slice(0, c)), m.push(bytes.slice(c)), m.flush()]))
      const [event, done] = out.split(end)
      expect(done).toBe('data: [DONE]')
      // As JSON carries it (no -0).
      expect(JSON.parse(event!.replace(/^data: ?/, ''))).toEqual(JSON.parse(JSON.stringify(Object.fromEntries(entries.filter(([k]) => k !== 'usage')))))
      expect(m.usage()).toBeNull()
    }),
    { numRuns: 3000 },
  )
})

/**
 * Under load a stream reaches the proxy in pieces cut anywhere. An event cut by a piece's end is
 * carried to the next piece as its bytes (SseMeter.rest), so the events after it still pass as the
 * provider's own bytes: shown with bytes that are not UTF-8 in each event's content, which a pass
 * through text would have turned into U+FFFD. One cut inside each event at most (an event cut twice
 * is read as text, as before).
 */
test('an event cut by a chunk\'s end is carried as bytes: every event after it still goes on as the provider\'s own bytes', () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.string({ maxLength: 8 }).filter((x) => !x.includes('\\') && !x.includes('usage')), fc.option(fc.nat(), { nil: null })), { minLength: 1, maxLength: 12 }), fc.boolean(), (events, strip) => {
      const parts: Uint8Array[] = []
      const cuts: number[] = []
      let at = 0
      for (const [text, cut] of events) {
        const before = enc.encode(`data: {"choices":[{"delta":{"content":${JSON.stringify(text)}}}]${strip ? ',"usage":null' : ''},"raw":"`)
        const frame = Buffer.concat([before, Buffer.from([0xff, 0xfe]), enc.encode('"}\n\n')])
        if (cut !== null) cuts.push(at + 1 + (cut % (frame.byteLength - 1)))
        parts.push(frame)
        at += frame.byteLength
      }
      const bytes = Buffer.concat(parts)
      const expected = strip ? Buffer.from(bytes.toString('latin1').replaceAll(',"usage":null', ''), 'latin1') : bytes
      expect(Buffer.compare(meter(bytes, cuts, strip).out, expected)).toBe(0)
    }),
    { numRuns: 500 },
  )
})

/**
 * Under load a whole answer reaches the proxy in one read, and a chunk past a couple of KB is
 * stripped in place (injected-usage.ts withoutSkips): what the client gets, and every piece handed
 * out before a later one was pushed (meter() joins them only at the end), is what the stream it
 * asked for holds, however the answer is cut.
 */
test('a long answer in one read or a few: stripped in place, the usage read, no piece handed out changed by a later one', () => {
  const long = stream.chain((s) => fc.array(fc.string({ unit: 'grapheme', maxLength: 80 }), { minLength: 20, maxLength: 60 }).map((texts) => ({ ...s, texts })))
  fc.assert(
    fc.property(long, fc.array(fc.nat(100_000), { maxLength: 2 }), fc.boolean(), (s, c, atEvents) => {
      const { raw, injectedView } = frames(s)
      const bytes = enc.encode(raw)
      expect(bytes.byteLength).toBeGreaterThan(2048)
      const r = meter(bytes, c, true, atEvents)
      expect(dec.decode(r.out)).toBe(injectedView)
      expect(r.usage).toEqual(s.usage ? { input: s.usage.prompt, cached: s.usage.cached, output: s.usage.completion } : null)
    }),
    { numRuns: 400 },
  )
})
