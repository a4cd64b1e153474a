/**
 * The id of the object a create answered with, read while the metered relay passes the answer on
 * (docs/house-objects.md): a JSON answer's top-level `id`; in a stream, the first event that
 * carries one (`response.created`'s `response.id`, a chat chunk's `id`). It wraps the usage meter,
 * which sees every byte of the answer once, so the answer is neither read nor parsed a second time
 * on its way: a stream is looked at only until its id has passed.
 */
import { memberText } from '../json-members'
import type { UsageMeter } from './meter'

/** How much of a stream is searched for its id: the first event carries it, and is small. */
const STREAM_SEARCH_BYTES = 65_536

const EVENT_END = /\r?\n\r?\n|\r\r/

/** `meter`, with `onId` told the object id once, as soon as it has passed. */
export function recordingAnswerId(meter: UsageMeter, stream: boolean, onId: (id: string) => void): UsageMeter {
  let done = false
  const found = (id: unknown) => {
    // An empty id (Azure's prompt-filter chunk opens a chat stream with one) is no object's: read on.
    if (done || typeof id !== 'string' || id === '') return
    done = true
    onId(id)
  }
  if (stream) {
    const decoder = new TextDecoder()
    let text = ''
    return delegate(meter, (chunk) => {
      if (done) return
      // Read before the meter: it may rewrite the chunk's bytes in place.
      text += decoder.decode(chunk, { stream: true })
      for (let end = text.search(EVENT_END); end !== -1 && !done; end = text.search(EVENT_END)) {
        found(idOfEvent(text.slice(0, end)))
        text = text.slice(end).replace(/^(\r?\n\r?\n|\r\r)/, '')
      }
      if (text.length > STREAM_SEARCH_BYTES) done = true
    })
  }
  const chunks: Uint8Array[] = []
  return delegate(
    meter,
    (chunk) => void chunks.push(chunk),
    () => found(idOfJson(Buffer.concat(chunks).toString('utf8'))),
  )
}

/** The id a stream event carries: a Responses event's `response.id`, else a chunk's own `id`. */
function idOfEvent(event: string): unknown {
  const data = event
    .split(/\r\n|\r|\n/)
    .filter((l) => l.startsWith('data:'))
    .map((l) => l.slice(5).trimStart())
    .join('\n')
  if (!data || data === '[DONE]') return undefined
  try {
    const o = JSON.parse(data) as Record<string, unknown>
    const response = o?.response as Record<string, unknown> | undefined
    return response && typeof response === 'object' ? response.id : o?.id
  } catch {
    return undefined
  }
}

/** A JSON answer's top-level `id`, cut out of its text without parsing the whole answer again. */
function idOfJson(text: string): unknown {
  const member = memberText(text, 'id')
  if (member === null) return undefined
  try {
    return JSON.parse(member)
  } catch {
    return undefined
  }
}

function delegate(meter: UsageMeter, peek: (chunk: Uint8Array) => void, atEnd: () => void = () => {}): UsageMeter {
  return {
    push(chunk) {
      peek(chunk)
      return meter.push(chunk)
    },
    flush() {
      atEnd()
      return meter.flush()
    },
    usage: () => meter.usage(),
    failedBeforeOutput: () => meter.failedBeforeOutput(),
    inputSoFar: () => meter.inputSoFar(),
  }
}
