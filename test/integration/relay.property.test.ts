/**
 * Property (the proxy's response body, paid-request/relay.ts): however the upstream's body is cut into
 * chunks, the client reads exactly the body with the provider key masked — in each spelling a client
 * decodes back into it (percent-encoded, JSON-escaped), one split across chunks included — and the relay reports exactly one ending: `complete` with every byte passed,
 * `too_large` once the upstream's count passes the cap (upstream aborted, the client's body cut), or
 * `client_closed` when the client cancels (upstream aborted), whenever it does.
 */
import { expect, test } from 'bun:test'
import fc from 'fast-check'
import { relay, type RelayEnd } from '../../src/paid-request/relay'
import { keySpellings, maskKey } from '../../src/upstream/scrub'

const enc = new TextEncoder()
const dec = new TextDecoder()

/** An upstream body read a macrotask at a time; a cancel answers a waiting read with the end, as a stream does. */
function upstream(chunks: Uint8Array[]) {
  let i = 0
  let waiting: ((r: { done: true; value: undefined }) => void) | null = null
  return {
    reader: {
      read: () =>
        new Promise<{ done: false; value: Uint8Array } | { done: true; value: undefined }>((r) => {
          waiting = r
          setTimeout(() => {
            waiting = null
            const k = i++
            r(k < chunks.length ? { done: false, value: chunks[k]! } : { done: true, value: undefined })
          }, 0)
        }),
      cancel: async () => {
        waiting?.({ done: true, value: undefined })
      },
    },
  }
}

/**
 * Text over a small alphabet, so that the key (made of the same letters) turns up often, and split
 * anywhere. The key may hold `/` and `+`, which encoders rewrite; the text then carries its other
 * spellings whole or cut short, and the pieces of an escape (`%`, `\u00`, hex digits) loose.
 */
const scenario = fc
  .record({
    key: fc.string({ unit: fc.constantFrom('k', 'e', 'y', '-', '/', '+', '%', '\\'), minLength: 2, maxLength: 6 }),
    pieces: fc.array(
      fc.oneof(
        { arbitrary: fc.constantFrom('k', 'e', 'y', '-', 'a', '\n', '/', '+', '%', '\\', 'u00', '2', 'f', 'F', 'b', 'B'), weight: 4 },
        { arbitrary: fc.record({ spelling: fc.nat(), cutShort: fc.nat({ max: 3 }) }), weight: 1 },
      ),
      { minLength: 1, maxLength: 80 },
    ),
    cuts: fc.array(fc.nat({ max: 600 }), { maxLength: 12 }),
    /** The client cancels after this many reads (null: it reads to the end). */
    cancelAfter: fc.option(fc.nat({ max: 14 }), { nil: null }),
    cap: fc.integer({ min: 1, max: 700 }),
  })
  .map((s) => {
    const spellings = keySpellings(s.key)
    const text = s.pieces
      .map((p) => {
        if (typeof p === 'string') return p
        const v = spellings[p.spelling % spellings.length]!
        return p.cutShort === 1 ? v.slice(0, -1) : v
      })
      .join('')
    const bytes = enc.encode(text)
    const at = [...new Set(s.cuts.map((c) => c % bytes.byteLength))].filter((c) => c > 0).sort((a, b) => a - b)
    const chunks = [0, ...at].map((from, i) => bytes.subarray(from, at[i] ?? bytes.byteLength))
    return { ...s, text, spellings, chunks }
  })

test('the client reads the body with the key masked, across any cuts; one ending, whenever it leaves', async () => {
  await fc.assert(
    fc.asyncProperty(scenario, async (s) => {
      const [first, ...rest] = s.chunks
      // The caller answers a first chunk past the cap itself (proxy/service.ts): the relay starts under it.
      const cap = Math.max(s.cap, first!.byteLength)
      const up = upstream(rest)
      const ends: { how: RelayEnd; bytes: number }[] = []
      let aborted = false
      let cancelled = false
      const body = relay(up.reader, first!, {
        cap,
        apiKey: s.key,
        abortUpstream: () => (aborted = true),
        clientGone: () => cancelled,
        onEnd: (how, bytes) => {
          ends.push({ how, bytes })
        },
      })
      const reader = body.getReader()
      const got: number[] = []
      let cut = false
      for (let n = 0; s.cancelAfter === null || n < s.cancelAfter; n++) {
        const r = await reader.read().catch(() => ((cut = true), null))
        if (r === null || r.done) break
        got.push(...r.value)
      }
      if (!ends.length && !cut) {
        cancelled = true
        await reader.cancel()
      }
      await Bun.sleep(2)

      const whole = enc.encode(maskKey(s.text, s.key))
      const total = enc.encode(s.text).byteLength
      expect(ends.length).toBe(1)
      const e = ends[0]!
      // What the client read is a prefix of the masked body: never a byte of the key.
      expect(got).toEqual([...whole.subarray(0, got.length)])
      const read = dec.decode(new Uint8Array(got))
      for (const v of s.spellings) expect(read).not.toContain(v)
      if (e.how === 'complete') {
        expect(total).toBeLessThanOrEqual(cap)
        expect(got).toEqual([...whole])
        expect(e.bytes).toBe(whole.byteLength)
      } else if (e.how === 'too_large') {
        expect(total).toBeGreaterThan(cap)
        expect(aborted).toBe(true)
        expect(cut).toBe(true)
      } else {
        expect(e.how).toBe('client_closed')
        expect(aborted).toBe(true)
      }
    }),
    { numRuns: 300 },
  )
}, 60_000)
