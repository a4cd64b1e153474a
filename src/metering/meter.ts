/**
 * Reads the usage out of a metered answer while the relay passes it on (CONTRACT §7):
 *   JsonMeter  a plain answer: its bytes are kept (the relay's response cap bounds them) and its
 *              `usage` read at the end;
 *   SseMeter   a stream: each complete event is inspected as it passes — the OpenAI chat usage
 *              chunk, the Responses `response.completed` event, Anthropic's `message_start` usage
 *              and the cumulative `message_delta` one.
 * When the proxy asked for the usage chunk itself (the client did not), SseMeter hands the client
 * exactly the stream it asked for: the usage-only chunk is dropped and the `usage: null` field the
 * option adds to every other chunk is taken out again.
 * A stream is passed on an event at a time: a partial event waits for its end (at most the event).
 */
import { anthropicUsage, openaiUsage, usageOfAnswer, type ApiKind, type TokenCounts } from './usage'

export interface UsageMeter {
  /** The bytes to pass on for an upstream chunk (possibly fewer, possibly none yet). */
  push(chunk: Uint8Array): Uint8Array
  /** What is still held at the end of the body. */
  flush(): Uint8Array
  /** The provider's usage, once it has arrived complete; null while it has not. */
  usage(): TokenCounts | null
}

const enc = new TextEncoder()

export class JsonMeter implements UsageMeter {
  private chunks: Uint8Array[] = []
  private read: TokenCounts | null = null
  constructor(private readonly kind: ApiKind) {}

  push(chunk: Uint8Array): Uint8Array {
    this.chunks.push(chunk)
    return chunk
  }

  flush(): Uint8Array {
    try {
      this.read = usageOfAnswer(this.kind, JSON.parse(Buffer.concat(this.chunks).toString('utf8')))
    } catch {
      this.read = null
    }
    this.chunks = []
    return new Uint8Array()
  }

  usage(): TokenCounts | null {
    return this.read
  }
}

const EVENT_END = /\r?\n\r?\n/

export class SseMeter implements UsageMeter {
  private readonly decoder = new TextDecoder()
  private held = ''
  private final: TokenCounts | null = null
  /** Anthropic: the input side from message_start, the output from the last message_delta. */
  private started: TokenCounts | null = null
  /**
   * The decoder holds no part of a character: the last chunk ended in '\n'. Otherwise a chunk passed
   * as its own bytes would lose (or, encoded after one that was, repeat) the character's first bytes.
   */
  private decoderEmpty = true

  constructor(
    private readonly kind: ApiKind,
    /** The proxy added `stream_options.include_usage`: hide what it added from the client. */
    private readonly stripInjected: boolean,
  ) {}

  push(chunk: Uint8Array): Uint8Array {
    const whole = this.held === '' && this.decoderEmpty
    // Most chunks are whole events that cannot carry the usage: they go on undecoded (issue 14's bench).
    if (whole && endsOneEvent(chunk) && !mayCarryUsage(chunk, this.kind)) return chunk
    if (chunk.byteLength) this.decoderEmpty = chunk[chunk.byteLength - 1] === 0x0a
    this.held += this.decoder.decode(chunk, { stream: true })
    let out = ''
    let same = true
    for (;;) {
      const m = EVENT_END.exec(this.held)
      if (!m) break
      const event = this.held.slice(0, m.index)
      const end = m[0]
      this.held = this.held.slice(m.index + end.length)
      const passed = this.inspect(event)
      if (passed !== event) same = false
      if (passed !== null) out += passed + end
    }
    // A chunk of whole events passed as they came goes on as its own bytes, not encoded again.
    if (same && whole && this.held === '' && this.decoderEmpty) return chunk
    return out ? enc.encode(out) : new Uint8Array()
  }

  flush(): Uint8Array {
    const rest = this.held + this.decoder.decode()
    this.held = ''
    if (!rest) return new Uint8Array()
    const passed = this.inspect(rest)
    return passed ? enc.encode(passed) : new Uint8Array()
  }

  usage(): TokenCounts | null {
    return this.final
  }

  /** The event to pass on (null: dropped), its usage noted. */
  private inspect(event: string): string | null {
    const lines = event.split(/\r?\n/)
    const dataAt = lines.findIndex((l) => l.startsWith('data:'))
    if (dataAt === -1) return event
    const data = lines.slice(dataAt).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n')
    if (data === '[DONE]') return event
    // Most chat chunks carry no usage: a top-level `usage` key is spelt `"usage"` (or with a \u
    // escape), so without either the parse below could only answer `event`.
    if (this.kind === 'chat' && !data.includes('"usage"') && !data.includes('\\u')) return event
    let o: Record<string, unknown>
    try {
      o = JSON.parse(data) as Record<string, unknown>
    } catch {
      return event
    }
    switch (this.kind) {
      case 'chat':
        if (o.usage) this.final = openaiUsage('chat', o.usage)
        if (!this.stripInjected || !('usage' in o)) return event
        if (Array.isArray(o.choices) && o.choices.length === 0) return null
        delete o.usage
        return [...lines.slice(0, dataAt).filter((l) => !l.startsWith('data:')), `data: ${JSON.stringify(o)}`].join('\n')
      case 'responses':
        if (o.type === 'response.completed' || o.type === 'response.incomplete' || o.type === 'response.failed') {
          const r = o.response as Record<string, unknown> | undefined
          if (r?.usage) this.final = openaiUsage('responses', r.usage)
        }
        return event
      case 'messages':
        if (o.type === 'message_start') this.started = anthropicUsage((o.message as Record<string, unknown> | undefined)?.usage)
        if (o.type === 'message_delta' && o.usage) {
          const d = anthropicUsage(o.usage)!
          const delta = o.usage as Record<string, unknown>
          const s = this.started ?? { input: 0, cached: 0, output: 0 }
          // Newer API versions repeat the input counts in message_delta; older ones send output only.
          this.final = {
            input: delta.input_tokens !== undefined || delta.cache_creation_input_tokens !== undefined ? d.input : s.input,
            cached: delta.cache_read_input_tokens !== undefined ? d.cached : s.cached,
            output: d.output,
          }
        }
        return event
      default:
        return event
    }
  }
}

const bytes = (s: string) => Buffer.from(s, 'latin1')
const USAGE_KEY = bytes('"usage"')
const ESCAPE = bytes('\\u')
const MESSAGE_START = bytes('message_start')
const LF = 0x0a
const CR = 0x0d

/**
 * The chunk ends exactly where the event split below would end its last event: "\n\n" or
 * "\r\n\r\n" after a byte that is no line break (so no longer run of them ends the chunk, whose
 * split could leave a line break held). A chunk that also starts an event is then whole events.
 */
function endsOneEvent(c: Uint8Array): boolean {
  const n = c.byteLength
  if (n < 3 || c[n - 1] !== LF) return false
  const before = c[n - 2] === LF ? n - 3 : c[n - 2] === CR && c[n - 3] === LF && c[n - 4] === CR ? n - 5 : -1
  return before >= 0 && c[before] !== LF && c[before] !== CR
}

/**
 * Whether an event of the chunk could change what `inspect` does: the usage of every API sits under
 * a `"usage"` key (or one spelt with a \u escape), and an Anthropic `message_start` resets the input
 * side even without one. Searched in the bytes: UTF-8 never puts an ASCII byte inside a character.
 */
function mayCarryUsage(c: Uint8Array, kind: ApiKind): boolean {
  const b = Buffer.from(c.buffer, c.byteOffset, c.byteLength)
  return b.includes(USAGE_KEY) || b.includes(ESCAPE) || (kind === 'messages' && b.includes(MESSAGE_START))
}

export function meterFor(kind: ApiKind, stream: boolean, stripInjected: boolean): UsageMeter {
  return stream ? new SseMeter(kind, stripInjected) : new JsonMeter(kind)
}
