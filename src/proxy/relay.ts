/**
 * The response body of a proxied request, relayed chunk by chunk as the upstream sends it (pulled
 * on demand, so nothing is buffered beyond the chunk in flight), counted against the response cap,
 * with the provider key masked. It reports exactly one ending:
 *   complete       the upstream body ended
 *   too_large      the count crossed the cap: upstream aborted, the client's body errors (cut off)
 *   upstream_error the upstream connection failed mid-body: the client's body errors
 *   client_closed  the client went away: upstream aborted
 * `onEnd` runs before the client's body closes or errors, so a refund is applied by the time the
 * client sees the cut.
 */
import { KeyScrubber } from './scrub'

export type RelayEnd = 'complete' | 'too_large' | 'upstream_error' | 'client_closed'

export interface RelayOptions {
  cap: number
  /** The injected key, masked in the bytes; '' turns masking off. */
  apiKey: string
  abortUpstream(): void
  clientGone(): boolean
  onEnd(end: RelayEnd): Promise<unknown> | void
}

export class RelayCutError extends Error {
  constructor(readonly end: RelayEnd) {
    super(`proxy response ended: ${end}`)
  }
}

export function relay(body: ReadableStream<Uint8Array>, opt: RelayOptions): ReadableStream<Uint8Array> {
  const reader = body.getReader()
  const scrubber = opt.apiKey ? new KeyScrubber(opt.apiKey) : null
  let bytes = 0
  let ended = false
  const end = async (how: RelayEnd) => {
    if (ended) return
    ended = true
    await opt.onEnd(how)
  }
  return new ReadableStream<Uint8Array>(
    {
      async pull(c) {
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
          if (tail?.byteLength) c.enqueue(tail)
          await end('complete')
          c.close()
          return
        }
        bytes += r.value.byteLength
        if (bytes > opt.cap) {
          opt.abortUpstream()
          reader.cancel().catch(() => {})
          await end('too_large')
          c.error(new RelayCutError('too_large'))
          return
        }
        const out = scrubber ? scrubber.push(r.value) : r.value
        if (out.byteLength) c.enqueue(out)
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
