/**
 * The response body of a metered proxied request (docs/api.md §7). Like relay.ts it passes the upstream
 * body on as it comes (one chunk at a time, on the client's demand), counted against the response
 * cap with the provider key masked; the meter reads the usage out of it on the way. Unlike it, the
 * upstream outlives the client: when the client goes away the body is still read to its end (bounded
 * by the cap and `drainMs`) and discarded, so the usage we charge is the usage the provider bills.
 * It reports exactly one ending, with the bytes relayed to the client:
 *   complete       the upstream body ended (the client may have left before: see `clientLeft`)
 *   too_large      past the cap: upstream aborted, the client's body errors
 *   upstream_error the upstream failed mid-body while the client was there: the client's body errors
 *   client_closed  the client left and the drain ended without the body's end (failed, timed out)
 */
import { concat, type UsageMeter } from '../metering/meter'
import { cutAtCap, RelayCutError, type ChunkReader, type RelayEnd } from './relay'
import { KeyScrubber } from '../upstream/scrub'

export interface MeteredRelayOptions {
  cap: number
  apiKey: string
  meter: UsageMeter
  abortUpstream(): void
  /** Aborts when the client's request goes away (Bun may not cancel the body stream itself). */
  clientSignal: AbortSignal
  /** How long the upstream is drained after the client left. */
  drainMs: number
  onEnd(end: RelayEnd, o: { relayed: number; upstream: number; clientLeft: boolean }): Promise<unknown> | void
}

type ReadResult = Awaited<ReturnType<ChunkReader['read']>>

export function meteredRelay(reader: ChunkReader, first: Uint8Array, opt: MeteredRelayOptions): ReadableStream<Uint8Array> {
  const scrubber = opt.apiKey ? new KeyScrubber(opt.apiKey) : null
  let upstream = first.byteLength
  let relayed = 0
  /** The first chunk, until the meter has seen it. */
  let pending: Uint8Array | null = first
  let gone = false
  let ended = false
  /** The read a pull is waiting on: when the client leaves meanwhile, the drain takes it over. */
  let inflight: Promise<ReadResult> | null = null

  const leave = () => {
    if (gone) return
    gone = true
    if (!ended) void drain(inflight)
  }
  const end = async (how: RelayEnd) => {
    if (ended) return
    ended = true
    opt.clientSignal.removeEventListener('abort', leave)
    await opt.onEnd(how, { relayed, upstream, clientLeft: gone })
  }
  /** The bytes to pass on for an upstream chunk: metered, then masked. */
  const pass = (chunk: Uint8Array) => {
    const metered = opt.meter.push(chunk)
    return scrubber ? scrubber.push(metered) : metered
  }
  /** A read that gives up at `deadline` (the drain's time limit) with null. */
  const readBy = async (read: Promise<ReadResult>, deadline: number) => {
    let timer: ReturnType<typeof setTimeout> | undefined
    const timeout = new Promise<null>((r) => (timer = setTimeout(() => r(null), Math.max(0, deadline - Date.now()))))
    try {
      return await Promise.race([read, timeout])
    } finally {
      clearTimeout(timer)
    }
  }

  /**
   * The client has left: the rest of the body is read for its usage and discarded, up to the cap
   * and `drainMs`, a read already in flight included (`started`: a pull's, which leaves it to us).
   */
  const drain = async (started: Promise<ReadResult> | null) => {
    const deadline = Date.now() + opt.drainMs
    if (pending) opt.meter.push(pending)
    pending = null
    for (;;) {
      let r: ReadResult | null
      try {
        r = await readBy(started ?? reader.read(), deadline)
      } catch {
        return end('client_closed')
      }
      started = null
      if (r === null) {
        // The drain ran out of time: the usage never arrived, the call is charged an estimate.
        opt.abortUpstream()
        reader.cancel().catch(() => {})
        return end('client_closed')
      }
      if (r.done) {
        opt.meter.flush()
        return end('complete')
      }
      upstream += r.value.byteLength
      if (upstream > opt.cap) return cutAtCap(null, reader, opt.abortUpstream, end)
      opt.meter.push(r.value)
    }
  }

  if (opt.clientSignal.aborted) leave()
  else opt.clientSignal.addEventListener('abort', leave, { once: true })

  return new ReadableStream<Uint8Array>(
    {
      // While the client is there the upstream is read on its demand, one chunk a pull. A pull must
      // enqueue something or end the stream (one that returns empty-handed is not called again), so
      // it reads on while the meter or the scrubber holds a whole chunk back.
      async pull(c) {
        const give = (bytes: Uint8Array) => {
          try {
            c.enqueue(bytes)
            relayed += bytes.byteLength
          } catch {
            // The stream is closed without a cancel: the client is gone all the same.
            leave()
          }
        }
        if (gone) return
        if (pending) {
          const out = pass(pending)
          pending = null
          if (out.byteLength) return give(out)
        }
        for (;;) {
          let r: ReadResult
          const read = (inflight = reader.read())
          try {
            r = await read
          } catch {
            inflight = null
            if (gone) return // the drain took this read over, its failure included
            await end('upstream_error')
            c.error(new RelayCutError('upstream_error'))
            return
          }
          inflight = null
          if (gone) return
          if (r.done) {
            const held = opt.meter.flush()
            const tail = scrubber ? concat(scrubber.push(held), scrubber.flush()) : held
            if (tail.byteLength) give(tail)
            await end('complete')
            c.close()
            return
          }
          upstream += r.value.byteLength
          if (upstream > opt.cap) return cutAtCap(c, reader, opt.abortUpstream, end)
          const out = pass(r.value)
          if (out.byteLength) return give(out)
        }
      },
      cancel() {
        leave()
      },
    },
    { highWaterMark: 0 },
  )
}
