/**
 * The response body of a proxied request, relayed chunk by chunk as the upstream sends it (pulled
 * on demand, so nothing is buffered beyond the chunk in flight), counted against the response cap,
 * with the provider key masked. The caller has already read the first chunk (so that a failure
 * before any byte can still be answered with an error status); the relay starts with it.
 * It reports exactly one ending:
 *   complete       the upstream body ended
 *   too_large      the count crossed the cap: upstream aborted, the client's body errors (cut off)
 *   upstream_error the upstream connection failed mid-body: the client's body errors
 *   client_closed  the client went away: upstream aborted
 * `onEnd` runs before the client's body closes or errors, so a refund is applied by the time the
 * client sees the cut.
 */
import { KeyScrubber } from '../upstream/scrub'

export type RelayEnd = 'complete' | 'too_large' | 'upstream_error' | 'client_closed'

export interface RelayOptions {
  cap: number
  /** The injected key, masked in the bytes; '' turns masking off. */
  apiKey: string
  abortUpstream(): void
  clientGone(): boolean
  /** With the bytes relayed to the client. */
  onEnd(end: RelayEnd, bytes: number): Promise<unknown> | void
}

export class RelayCutError extends Error {
  constructor(readonly end: RelayEnd) {
    super(`proxy response ended: ${end}`)
  }
}

/** What the relay needs of the upstream body's reader. */
export type ChunkReader = Pick<ReadableStreamDefaultReader<Uint8Array>, 'read' | 'cancel'>

/**
 * Past the response cap: the upstream stops, the ending is reported, then the client's body errors
 * (`c` null: the client has already left, as in a metered drain).
 */
export async function cutAtCap(c: ReadableStreamDefaultController<Uint8Array> | null, reader: ChunkReader, abortUpstream: () => void, end: (how: RelayEnd) => Promise<unknown>): Promise<void> {
  abortUpstream()
  reader.cancel().catch(() => {})
  await end('too_large')
  c?.error(new RelayCutError('too_large'))
}

export function relay(reader: ChunkReader, first: Uint8Array, opt: RelayOptions): ReadableStream<Uint8Array> {
  const scrubber = opt.apiKey ? new KeyScrubber(opt.apiKey) : null
  let bytes = first.byteLength
  let passed = 0
  let pending: Uint8Array | null = first
  let ended = false
  const end = async (how: RelayEnd) => {
    if (ended) return
    ended = true
    await opt.onEnd(how, passed)
  }
  /** The bytes to pass on for an upstream chunk: masked, minus a held-back tail that may be the key. */
  const pass = (chunk: Uint8Array) => {
    const out = scrubber ? scrubber.push(chunk) : chunk
    passed += out.byteLength
    return out
  }
  return new ReadableStream<Uint8Array>(
    {
      // A pull must enqueue something or end the stream (a pull that returns empty-handed is not
      // called again), so it reads on while the scrubber holds a whole chunk back.
      async pull(c) {
        if (pending) {
          const out = pass(pending)
          pending = null
          if (out.byteLength) return c.enqueue(out)
        }
        for (;;) {
          let r: Awaited<ReturnType<typeof reader.read>>
          try {
            r = await reader.read()
          } catch {
            const how = opt.clientGone() ? 'client_closed' : 'upstream_error'
            await end(how)
            c.error(new RelayCutError(how))
            return
          }
          if (r.done) {
            const tail = scrubber?.flush()
            if (tail?.byteLength) {
              passed += tail.byteLength
              c.enqueue(tail)
            }
            await end('complete')
            c.close()
            return
          }
          bytes += r.value.byteLength
          if (bytes > opt.cap) return cutAtCap(c, reader, opt.abortUpstream, end)
          const out = pass(r.value)
          if (out.byteLength) return c.enqueue(out)
        }
      },
      async cancel() {
        opt.abortUpstream()
        reader.cancel().catch(() => {})
        await end('client_closed')
      },
    },
    { highWaterMark: 0 },
  )
}
