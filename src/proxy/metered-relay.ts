/**
 * The response body of a metered proxied request (CONTRACT §7). Like relay.ts it passes the upstream
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
import type { UsageMeter } from '../metering/meter'
import { RelayCutError, type ChunkReader, type RelayEnd } from './relay'
import { KeyScrubber } from './scrub'

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

export function meteredRelay(reader: ChunkReader, first: Uint8Array, opt: MeteredRelayOptions): ReadableStream<Uint8Array> {
  const scrubber = opt.apiKey ? new KeyScrubber(opt.apiKey) : null
  let upstream = 0
  let relayed = 0
  let gone = false
  let wanted = false
  let wake: (() => void) | null = null
  let c!: ReadableStreamDefaultController<Uint8Array>
  const nudge = () => {
    const w = wake
    wake = null
    w?.()
  }
  const leave = () => {
    if (gone) return
    gone = true
    nudge()
  }
  if (opt.clientSignal.aborted) gone = true
  else opt.clientSignal.addEventListener('abort', leave, { once: true })

  const send = (bytes: Uint8Array) => {
    if (!bytes.byteLength || gone) return
    try {
      c.enqueue(bytes)
      relayed += bytes.byteLength
      wanted = false
    } catch {
      leave()
    }
  }
  const pass = (chunk: Uint8Array) => {
    const metered = opt.meter.push(chunk)
    send(scrubber ? scrubber.push(metered) : metered)
  }
  const end = async (how: RelayEnd) => {
    opt.clientSignal.removeEventListener('abort', leave)
    await opt.onEnd(how, { relayed, upstream, clientLeft: gone })
  }
  /** A read that gives up at `deadline` (the drain's time limit) with null. */
  const readBy = async (deadline: number) => {
    let timer: ReturnType<typeof setTimeout> | undefined
    const timeout = new Promise<null>((r) => (timer = setTimeout(() => r(null), Math.max(0, deadline - Date.now()))))
    try {
      return await Promise.race([reader.read(), timeout])
    } finally {
      clearTimeout(timer)
    }
  }

  const pump = async () => {
    upstream = first.byteLength
    pass(first)
    let deadline = Infinity
    for (;;) {
      while (!gone && !wanted) await new Promise<void>((r) => (wake = r))
      if (gone && deadline === Infinity) deadline = Date.now() + opt.drainMs
      let r: Awaited<ReturnType<ChunkReader['read']>> | null
      try {
        r = gone ? await readBy(deadline) : await reader.read()
      } catch {
        const how = gone ? 'client_closed' : 'upstream_error'
        await end(how)
        if (how === 'upstream_error') c.error(new RelayCutError(how))
        return
      }
      if (r === null) {
        // The drain ran out of time: the usage never arrived, the call is charged an estimate.
        opt.abortUpstream()
        reader.cancel().catch(() => {})
        return end('client_closed')
      }
      if (r.done) {
        const held = opt.meter.flush()
        const tail = scrubber ? concat(scrubber.push(held), scrubber.flush()) : held
        send(tail)
        await end('complete')
        if (!gone) c.close()
        return
      }
      upstream += r.value.byteLength
      if (upstream > opt.cap) {
        opt.abortUpstream()
        reader.cancel().catch(() => {})
        await end('too_large')
        if (!gone) c.error(new RelayCutError('too_large'))
        return
      }
      pass(r.value)
    }
  }

  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        c = controller
        void pump().catch((e) => {
          try {
            c.error(e)
          } catch {}
        })
      },
      pull() {
        wanted = true
        nudge()
      },
      cancel() {
        leave()
      },
    },
    { highWaterMark: 0 },
  )
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (!b.byteLength) return a
  if (!a.byteLength) return b
  const out = new Uint8Array(a.byteLength + b.byteLength)
  out.set(a)
  out.set(b, a.byteLength)
  return out
}
