/**
 * Property (docs/api.md §7, "when the stream breaks"): the metered relay, whenever its client leaves —
 * before the first pull, between pulls, or while a pull waits on the upstream — meters every byte
 * the upstream sends exactly once and in order, reports exactly one ending, and hands the client a
 * prefix of the body: the whole of it and `complete` when the client stays; `complete` with the
 * client gone when the drain reads to the end; `client_closed` when the drain's time runs out (the
 * upstream aborted); `too_large` past the cap, counted while draining too.
 */
import { expect, test } from 'bun:test'
import fc from 'fast-check'
import type { UsageMeter } from '../../src/metering/meter'
import { meteredRelay } from '../../src/paid-request/metered-relay'
import type { RelayEnd } from '../../src/paid-request/relay'

/** A meter that passes every byte on and records what it saw. */
class SpyMeter implements UsageMeter {
  seen: number[] = []
  flushed = 0
  push(chunk: Uint8Array): Uint8Array {
    this.seen.push(...chunk)
    return chunk
  }
  flush(): Uint8Array {
    this.flushed++
    return new Uint8Array()
  }
  usage() {
    return null
  }
  failedBeforeOutput() {
    return false
  }
  inputSoFar() {
    return null
  }
}

/** An upstream body whose every read answers a macrotask later; after `stallAt` reads it never answers. */
function upstream(chunks: Uint8Array[], stallAt: number | null) {
  let i = 0
  let cancelled = false
  return {
    reads: () => i,
    cancelled: () => cancelled,
    reader: {
      read: () => {
        const k = i++
        if (stallAt !== null && k >= stallAt) return new Promise<never>(() => {})
        return new Promise<{ done: false; value: Uint8Array } | { done: true; value: undefined }>((r) =>
          setTimeout(() => r(k < chunks.length ? { done: false, value: chunks[k]! } : { done: true, value: undefined }), 0),
        )
      },
      cancel: async () => {
        cancelled = true
      },
    },
  }
}

const scenario = fc.record({
  chunks: fc.array(fc.uint8Array({ minLength: 1, maxLength: 40 }), { minLength: 1, maxLength: 12 }),
  /** How many chunks the client takes before it leaves (null: it stays to the end). */
  leaveAfter: fc.option(fc.nat({ max: 13 }), { nil: null }),
  /** It leaves while one more read of its own is waiting (a pull in flight), or with none. */
  midPull: fc.boolean(),
  /** It has left before the relay is built (the request's signal already aborted). */
  goneAtStart: fc.boolean(),
  /** The upstream stops answering after this many reads (the drain's time limit then ends it). */
  stallAt: fc.option(fc.nat({ max: 13 }), { nil: null }),
  cap: fc.integer({ min: 1, max: 600 }),
})

test('every upstream byte metered once, in order, one ending, the client a prefix, whenever it leaves', async () => {
  await fc.assert(
    fc.asyncProperty(scenario, async (s) => {
      const [first, ...rest] = s.chunks
      // The caller answers a first chunk past the cap itself (proxy/service.ts): the relay starts under it.
      const cap = Math.max(s.cap, first!.byteLength)
      const up = upstream(rest, s.stallAt)
      const meter = new SpyMeter()
      const client = new AbortController()
      if (s.goneAtStart) client.abort()
      const ends: { how: RelayEnd; relayed: number; upstream: number; clientLeft: boolean }[] = []
      let aborted = false
      let ended!: () => void
      const done = new Promise<void>((r) => (ended = r))
      const body = meteredRelay(up.reader, first!, {
        cap,
        apiKey: '',
        meter,
        abortUpstream: () => (aborted = true),
        clientSignal: client.signal,
        drainMs: 20,
        onEnd: (how, o) => {
          ends.push({ how, ...o })
          ended()
        },
      })
      const reader = body.getReader()
      const got: number[] = []
      let cut = false
      const stays = s.leaveAfter === null && !s.goneAtStart
      for (let n = 0; stays || n < (s.leaveAfter ?? 0); n++) {
        if (s.goneAtStart) break
        // A stalled upstream with the client still there: the client's own timeout makes it leave.
        const r = await Promise.race([reader.read().catch(() => ((cut = true), null)), Bun.sleep(30).then(() => 'stalled' as const)])
        if (r === 'stalled' || r === null || r.done) break
        got.push(...r.value)
      }
      if (!ends.length && !cut) {
        if (s.midPull) void reader.read().catch(() => {})
        await Bun.sleep(0)
        client.abort()
        void reader.cancel().catch(() => {})
      }
      await Promise.race([done, Bun.sleep(2_000)])
      await Bun.sleep(5)

      const all = s.chunks.flatMap((c) => [...c])
      const total = all.length
      expect(ends.length).toBe(1)
      const e = ends[0]!
      // What the client got is a prefix of the body, and what the relay says it relayed.
      expect(got).toEqual(all.slice(0, got.length))
      expect(e.relayed).toBeGreaterThanOrEqual(got.length)
      // The meter saw the upstream's bytes in order, each once: all of them unless the body was cut short.
      expect(meter.seen).toEqual(all.slice(0, meter.seen.length))
      expect(e.upstream).toBeGreaterThanOrEqual(meter.seen.length)
      if (e.how === 'complete') {
        expect(meter.seen.length).toBe(total)
        expect(meter.flushed).toBe(1)
        expect(total).toBeLessThanOrEqual(cap)
      }
      if (e.how === 'too_large') {
        expect(e.upstream).toBeGreaterThan(cap)
        expect(aborted).toBe(true)
      }
      if (e.how === 'client_closed') {
        // Only a stalled upstream keeps a drain from its end: it is then aborted.
        expect(s.stallAt).not.toBeNull()
        expect(aborted).toBe(true)
        expect(e.clientLeft).toBe(true)
      }
      expect(e.how).not.toBe('upstream_error')
      if (e.clientLeft) expect(up.reads()).toBeGreaterThanOrEqual(1)
    }),
    { numRuns: 150 },
  )
}, 60_000)
