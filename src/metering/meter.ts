/**
 * Reads the usage out of a metered answer while the relay passes it on (docs/api.md §7):
 *   JsonMeter  a plain answer: its bytes are kept (the relay's response cap bounds them) and its
 *              `usage` read at the end (from the answer's last bytes when that is exact);
 *   SseMeter   a stream: each complete event is inspected as it passes — the OpenAI chat usage
 *              chunk, the Responses `response.completed` event, Anthropic's `message_start` usage
 *              and the cumulative `message_delta` one.
 * When the proxy asked for the usage chunk itself (the client did not), SseMeter hands the client
 * exactly the stream it asked for: the usage-only chunk is dropped and the `usage: null` field the
 * option adds to every other chunk is taken out again.
 * A stream is passed on an event at a time: a partial event waits for its end (at most the event).
 */
import { usageAtTail } from './answer-tail'
import type { CostWriter } from './cost'
import { insertionAt, objectEndAt } from './usage-object'
import { injectedNulls, withoutInjectedNull, withoutSkips } from './injected-usage'
import { CR, ESCAPE, LF, MESSAGE_START, USAGE_KEY } from './sse-marks'
import { anthropicUsage, openaiUsage, usageOfAnswer, type ApiKind, type TokenCounts } from './usage'
import { asBuffer, bytesAt, indexOfBytes } from '../bytes'

export interface UsageMeter {
  /**
   * The bytes to pass on for an upstream chunk (possibly fewer, possibly none yet). The chunk is
   * the meter's from then on: its bytes may be rewritten in place (an upstream read's own bytes,
   * which nothing else holds).
   */
  push(chunk: Uint8Array): Uint8Array
  /** What is still held at the end of the body. */
  flush(): Uint8Array
  /** The provider's usage, once it has arrived complete; null while it has not. */
  usage(): TokenCounts | null
  /**
   * The provider reported an error before any output and no usage (a stream's `error` event after
   * only its preamble): the upstream failed before any output, which docs/api.md §7 refunds.
   */
  failedBeforeOutput(): boolean
  /** The input side the provider has reported so far (Anthropic's message_start), or null. */
  inputSoFar(): Omit<TokenCounts, 'output'> | null
}

const enc = new TextEncoder()

export class JsonMeter implements UsageMeter {
  private chunks: Uint8Array[] = []
  private read: TokenCounts | null = null
  /**
   * `costs`: the answer's usage object gains the call's cost (docs/api.md §7). The answer is then
   * held to its end (its bytes are kept for the usage anyway, bounded by the response cap) and
   * passed on whole by flush(), the cost written into it.
   */
  constructor(
    private readonly kind: ApiKind,
    private readonly costs: CostWriter | null = null,
  ) {}

  push(chunk: Uint8Array): Uint8Array {
    this.chunks.push(chunk)
    return this.costs ? EMPTY : chunk
  }

  flush(): Uint8Array {
    const chunks = this.chunks
    this.chunks = []
    // Read from the answer's end when that is exact (answer-tail.ts), else parsed whole.
    const fromEnd = usageAtTail(chunks)
    let whole: Buffer | null = null
    try {
      if (fromEnd) this.read = usageOfAnswer(this.kind, { usage: fromEnd.value })
      else this.read = usageOfAnswer(this.kind, JSON.parse((whole = Buffer.concat(chunks)).toString('utf8')))
    } catch {
      this.read = null
    }
    if (!this.costs) return EMPTY
    const body = whole ?? (chunks.length === 1 ? asBuffer(chunks[0]!) : Buffer.concat(chunks))
    if (!this.read) return body
    // Where the usage object closes: known from the end, else found by walking the answer's members.
    const close = fromEnd ? fromEnd.close : objectEndAt(body.toString('latin1'), 0, ['usage'])
    if (close === -1) return body
    return spliced(body, close, this.costs(this.read))
  }

  usage(): TokenCounts | null {
    return this.read
  }

  /** A plain answer's failure is its HTTP status. */
  failedBeforeOutput(): boolean {
    return false
  }

  /** A plain answer reports its usage whole or not at all. */
  inputSoFar(): null {
    return null
  }
}

/**
 * A blank line: two line ends, each \r\n, \n or a lone \r (SSE's three). Global, to search from
 * `lastIndex`. Only \n-framed streams take the undecoded paths (they look for line feeds); a stream
 * framed by lone \r's has none and is read here, as text.
 */
const EVENT_END = /(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)/g
/** One line end of an event's text. */
const LINE_END = /\r\n|\r|\n/

export class SseMeter implements UsageMeter {
  private readonly decoder = new TextDecoder()
  /** The text of an event not ended yet. */
  private held = ''
  /** Its last 3 characters: where an event end arriving with the next chunk may start. */
  private heldTail = ''
  private final: TokenCounts | null = null
  /** Anthropic: message_start's usage object, which a message_delta's numbers override field by field. */
  private started: Record<string, unknown> | null = null
  /**
   * The decoder holds no part of a character: the last chunk ended in '\n'. Otherwise a chunk passed
   * as its own bytes would lose (or, encoded after one that was, repeat) the character's first bytes.
   */
  private decoderEmpty = true
  /** The start of an event the last chunk cut, as its bytes (rest()); only while `held` is ''. */
  private carry: Uint8Array | null = null
  /**
   * No event carrying output has passed yet. Until one does every event is read for its kind, so
   * that an error the provider streams before any output is seen.
   */
  private beforeOutput = true
  private failedEarly = false

  constructor(
    private readonly kind: ApiKind,
    /** The proxy added `stream_options.include_usage`: hide what it added from the client. */
    private readonly stripInjected: boolean,
    /** Each usage object passed on gains the call's cost so far (docs/api.md §7). */
    private readonly costs: CostWriter | null = null,
  ) {}

  push(chunk: Uint8Array): Uint8Array {
    if (this.carry) {
      const carried = this.carry
      this.carry = null
      chunk = concat(carried, chunk)
      // An event is carried as bytes across one chunk boundary only: one that does not end in the
      // next chunk either is read as text from here on (a long event in small chunks, linearly).
      if (nextEventEnd(chunk, Math.max(0, carried.byteLength - 3)) === -1) return this.decodeAndInspect(chunk)
    }
    // At an event's start, the whole events before the first byte that may concern the usage go on
    // undecoded: most chunks entirely, and a stream read in one chunk up to its usage (issue 14's bench).
    if (this.held === '' && this.decoderEmpty) {
      if (this.beforeOutput) this.notePreambleOf(chunk)
      // Once the proxy asked for the usage, every chunk carries `"usage":null`: taken out in the bytes.
      if (this.stripInjected) {
        const skips: number[] = []
        let cut = injectedNulls(chunk, 0, skips)
        // The usage chunk the option added (under load, with the answer's other events in one read).
        for (let end: number; cut < chunk.byteLength && (end = this.droppedUsageChunk(chunk, cut)) !== -1; cut = injectedNulls(chunk, end, skips))
          skips.push(cut, end)
        if (cut === chunk.byteLength) return withoutSkips(chunk, skips, cut, EMPTY)
        if (cut > 0) return withoutSkips(chunk, skips, cut, this.rest(chunk.subarray(cut)))
      }
      const mark = firstMark(chunk, this.kind)
      if (mark === -1 && endsOneEvent(chunk)) return chunk
      const cut = wholeEventsBefore(chunk, mark)
      if (cut === chunk.byteLength) return chunk
      if (cut > 0) return concat(chunk.subarray(0, cut), this.rest(chunk.subarray(cut)))
      return this.rest(chunk)
    }
    return this.decodeAndInspect(chunk)
  }

  /**
   * What follows a chunk's leading events, from an event's start. An event cut by the chunk's end
   * (no event end in `tail`) is carried as bytes to the next chunk, which then starts at an
   * event's start and takes the undecoded paths again: under load a provider's stream reaches us
   * in pieces cut anywhere, and once one piece ended inside an event, every later one used to be
   * decoded, split and encoded again as text (in process, a 22-event stream cut every 1,024 bytes
   * cost the meter about 3× a whole one: bench/relay-cost.ts --split). Anything else is read as text.
   */
  private rest(tail: Uint8Array): Uint8Array {
    if (tail.byteLength > MAX_CARRY || nextEventEnd(tail, 0) !== -1) return this.decodeAndInspect(tail)
    this.carry = tail
    return EMPTY
  }

  /**
   * For an event starting at c[at] that the text path would drop as the usage chunk the proxy
   * asked for (inspect(): a chat chunk whose `usage` is set and whose `choices` are empty, once
   * output has passed): its usage noted, and the event's end returned; -1 for any other event,
   * left to the text path. Read from its own bytes: a single `data:` line holding no backslash
   * (so no spelling inspect's text checks could read otherwise), parsed once.
   */
  private droppedUsageChunk(c: Uint8Array, at: number): number {
    if (this.kind !== 'chat' || this.beforeOutput || !bytesAt(c, at, DATA_OBJECT)) return -1
    const end = nextEventEnd(c, at)
    const lf = c.indexOf(LF, at)
    if (end === -1 || end - lf > 3) return -1
    const textEnd = c[lf - 1] === CR ? lf - 1 : lf
    const slash = indexOfBytes(c, 0x5c, at)
    if (slash !== -1 && slash < end) return -1
    let o: unknown
    try {
      o = JSON.parse(utf8.call(c as Buffer, 'utf8', at + DATA_OBJECT.byteLength - 1, textEnd))
    } catch {
      return -1
    }
    if (!o || typeof o !== 'object') return -1
    if (!isUsageChunk(o as Record<string, unknown>)) return -1
    this.final = openaiUsage('chat', (o as Record<string, unknown>).usage)
    return end
  }

  private decodeAndInspect(chunk: Uint8Array): Uint8Array {
    const whole = this.held === '' && this.decoderEmpty
    if (chunk.byteLength) this.decoderEmpty = chunk[chunk.byteLength - 1] === 0x0a
    // What was held had no event end: one can only start in its last 3 characters (an end is at most
    // 4). Until one arrives the held text is only appended to, never searched or copied whole: a long
    // event in small chunks was otherwise searched (and flattened) again for each (quadratic, up to
    // the response cap).
    const text = this.decoder.decode(chunk, { stream: true })
    const probe = this.heldTail + text
    EVENT_END.lastIndex = 0
    if (!EVENT_END.test(probe)) {
      this.held += text
      this.heldTail = probe.slice(-3)
      return new Uint8Array()
    }
    const from = Math.max(0, this.held.length - 3)
    this.held += text
    const { out, same } = this.events(from, false)
    this.heldTail = this.held.slice(-3)
    // A chunk of whole events passed as they came goes on as its own bytes, not encoded again.
    if (same && whole && this.held === '' && this.decoderEmpty) return chunk
    return out ? enc.encode(out) : new Uint8Array()
  }

  /**
   * Takes the whole events off the start of `held` (the first end searched from `from`) and passes
   * them: what goes on, and whether every event went as it came. A lone \r ends a line (SSE), so a
   * \r at the very end of the text may be the start of a \r\n not read yet: an end that closes with
   * it waits for the next chunk, unless the body has ended (`final`).
   */
  private events(from: number, final: boolean): { out: string; same: boolean } {
    let out = ''
    let same = true
    for (;;) {
      EVENT_END.lastIndex = from
      const m = EVENT_END.exec(this.held)
      if (!m) break
      const end = m[0]
      const after = m.index + end.length
      if (!final && after === this.held.length && end.endsWith('\r')) break
      from = 0
      const event = this.held.slice(0, m.index)
      this.held = this.held.slice(after)
      const passed = this.pass(event)
      if (passed !== event) same = false
      if (passed !== null) out += passed + end
    }
    return { out, same }
  }

  flush(): Uint8Array {
    const carried = this.carry
    this.carry = null
    // A carried event's bytes start at an event's start with the decoder empty: decoded whole. They
    // may hold events that end in lone \r's (no line feed), as may an end held back for a \n.
    this.held += carried ? this.decoder.decode(carried) : this.decoder.decode()
    const { out } = this.held ? this.events(0, true) : { out: '' }
    const rest = this.held
    this.held = ''
    this.heldTail = ''
    const passed = rest ? this.pass(rest) : null
    const all = passed ? out + passed : out
    return all ? enc.encode(all) : new Uint8Array()
  }

  usage(): TokenCounts | null {
    return this.final
  }

  failedBeforeOutput(): boolean {
    return this.failedEarly && this.beforeOutput && this.final === null
  }

  inputSoFar(): Omit<TokenCounts, 'output'> | null {
    const u = this.started && anthropicUsage(this.started)
    if (!u) return null
    const { output: _, ...input } = u
    return input
  }

  private pass(event: string): string | null {
    if (this.beforeOutput) this.notePreamble(event)
    return this.inspect(event)
  }

  /**
   * The whole events a chunk that starts an event opens with, noted one at a time until one is
   * output: the rest of the chunk, and the chunk itself, still take the undecoded paths. (An event
   * the text path passes is noted there too; noting one twice changes nothing.)
   */
  private notePreambleOf(chunk: Uint8Array): void {
    for (let from = 0, end = nextEventEnd(chunk, 0); this.beforeOutput && end !== -1; from = end, end = nextEventEnd(chunk, end)) {
      if (this.kind === 'chat' && isPlainChatChunk(chunk, from, end)) this.beforeOutput = false
      else this.notePreamble(preambleDecoder.decode(chunk.subarray(from, end)))
    }
  }

  /**
   * While no output has passed: an error event marks the stream failed; an event of the preamble
   * (a start, a ping, a comment) leaves it before output; any other event is output.
   */
  private notePreamble(event: string): void {
    const data = dataOf(event)
    if (data === null || data === '[DONE]') return
    let o: Record<string, unknown> | null = null
    try {
      const v = JSON.parse(data) as unknown
      if (v && typeof v === 'object' && !Array.isArray(v)) o = v as Record<string, unknown>
    } catch {
      // Not JSON: not an event we know, so output as far as the charge goes.
    }
    const type = /^event:\s*(\S+)/m.exec(event)?.[1] ?? (typeof o?.type === 'string' ? o.type : undefined)
    // Anthropic and the Responses API: an `error` event; OpenAI chat: a chunk of `{"error": …}`.
    if (type === 'error' || (this.kind === 'chat' && o !== null && 'error' in o && !('choices' in o))) this.failedEarly = true
    else if (type === undefined || !PREAMBLE.has(type)) this.beforeOutput = false
  }

  /** The event to pass on (null: dropped), its usage noted. */
  private inspect(event: string): string | null {
    // Most events carry no usage: it is always under a key spelt `"usage"` (or with a \u escape),
    // and an Anthropic message_start resets the input side; without any of these (firstMark's
    // marks) the parse below could only answer `event`.
    if (!event.includes('"usage"') && !event.includes('\\u') && (this.kind !== 'messages' || !event.includes('message_start'))) return event
    const lines = event.split(LINE_END)
    const dataAt = lines.findIndex((l) => l.startsWith('data:'))
    if (dataAt === -1) return event
    const data = lines.slice(dataAt).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n')
    if (data === '[DONE]') return event
    // The member the usage option added, taken out of the text as injectedNulls finds it in
    // the bytes (this is where a chunk that does not start at an event's start gets it).
    if (this.stripInjected && dataAt === 0 && lines.length === 1) {
      const stripped = withoutInjectedNull(event)
      if (stripped !== null) return stripped
    }
    let o: Record<string, unknown>
    try {
      o = JSON.parse(data) as Record<string, unknown>
    } catch {
      return event
    }
    switch (this.kind) {
      case 'chat':
        if (o.usage) this.final = openaiUsage('chat', o.usage)
        // A usage the client asked for itself carries the cost; one the proxy asked for goes below.
        if (!this.stripInjected) return o.usage ? this.costed(event, USAGE_PATH) : event
        if (!('usage' in o)) return event
        // The usage chunk itself goes; a chunk without choices for another reason (Azure's prompt
        // filter results) reached the client before the option too, only its `usage: null` goes.
        if (isUsageChunk(o)) return null
        delete o.usage
        // The event's other lines (event:, id:, comments) stay where they were; its data lines become one.
        return lines.flatMap((l, i) => (i === dataAt ? [`data: ${JSON.stringify(o)}`] : l.startsWith('data:') ? [] : [l])).join('\n')
      case 'responses':
        if (o.type === 'response.completed' || o.type === 'response.incomplete' || o.type === 'response.failed') {
          const r = o.response as Record<string, unknown> | undefined
          if (r?.usage) {
            this.final = openaiUsage('responses', r.usage)
            return this.costed(event, RESPONSE_USAGE_PATH)
          }
        }
        return event
      case 'messages':
        if (o.type === 'message_start') this.started = ((o.message as Record<string, unknown> | undefined)?.usage ?? null) as Record<string, unknown> | null
        if (o.type === 'message_delta' && o.usage) {
          // Cumulative; a field the delta does not give as a number (MessageDeltaUsage's input fields are
          // nullable; a string or an object is no count either) keeps message_start's.
          const merged: Record<string, unknown> = { ...(this.started ?? {}) }
          for (const [k, v] of Object.entries(o.usage as Record<string, unknown>)) if (typeof v === 'number') merged[k] = v
          this.final = anthropicUsage(merged)
          // The cost of the whole usage so far: message_start's input with this delta's output.
          return this.costed(event, USAGE_PATH)
        }
        return event
      default:
        return event
    }
  }

  /**
   * The event with the call's cost written into its usage object at `path` of its data (the usage
   * just read), every other character as it came; the event itself where there is none to write.
   */
  private costed(event: string, path: readonly string[]): string {
    if (!this.costs || !this.final) return event
    // The data's characters, each with its offset in the event (data lines joined by '\n', as inspect reads them).
    let data = ''
    const offsets: number[] = []
    for (let pos = 0; pos < event.length; ) {
      LINE_END_FROM.lastIndex = pos
      const m = LINE_END_FROM.exec(event)
      const end = m ? m.index : event.length
      const line = event.slice(pos, end)
      if (line.startsWith('data:')) {
        const text = line.slice(5).trimStart()
        if (offsets.length) data += '\n'
        offsets.push(end - text.length - data.length)
        data += text
      }
      pos = m ? end + m[0].length : end
    }
    const close = objectEndAt(data, 0, path)
    if (close === -1) return event
    const { at, text } = insertionAt(data, close, this.costs(this.final))
    // The members go where data[at] sits, on that character's own line.
    const lineOf = dataLineAt(data, at)
    const where = at + offsets[lineOf]!
    return event.slice(0, where) + text + event.slice(where)
  }
}

/** The index of the data line (0: the first) that the data's character at `at` lies on (or ends). */
function dataLineAt(data: string, at: number): number {
  let line = 0
  for (let i = data.indexOf('\n'); i !== -1 && i < at; i = data.indexOf('\n', i + 1)) line++
  return line
}

const USAGE_PATH = ['usage'] as const
const RESPONSE_USAGE_PATH = ['response', 'usage'] as const
/** A line end (SSE's three), searched from `lastIndex`. */
const LINE_END_FROM = /\r\n|\r|\n/g

/**
 * Whether the event c[from, end) is one notePreamble would find to be output of an OpenAI chat
 * stream, known from its bytes: a single `data:` line holding an object with no `"type"` and no
 * `"error"` key at any depth and no backslash (so no key spelt with an escape). Such an event has
 * no event type and is no error chunk. Every chunk of a chat stream is one; reading the first
 * without decoding and parsing it was a tenth of the meter's CPU per stream (bench/relay-cost.ts).
 * Anything else is left to notePreamble.
 */
function isPlainChatChunk(c: Uint8Array, from: number, end: number): boolean {
  if (c[from] !== 0x64 || c[from + 1] !== 0x61 || c[from + 2] !== 0x74 || c[from + 3] !== 0x61 || c[from + 4] !== 0x3a) return false
  let i = from + 5
  while (c[i] === 0x20) i++
  if (c[i] !== 0x7b) return false
  for (; i < end; i++) {
    const x = c[i]!
    // The first line break ends the event's one line: the event end must follow it at once.
    if (x === LF || x === CR) return end - i <= 4 && (c[i + 1] === LF || c[i + 1] === CR)
    if (x === 0x5c) return false
    if (x === 0x22 && (bytesAt(c, i + 1, TYPE_KEY) || bytesAt(c, i + 1, ERROR_KEY))) return false
  }
  return false
}

const TYPE_KEY = Buffer.from('type"', 'latin1')
const ERROR_KEY = Buffer.from('error"', 'latin1')

/** The chat chunk the usage option adds: the counts, and no choices (docs/api.md §7). */
const isUsageChunk = (o: Record<string, unknown>) => Boolean(o.usage) && Array.isArray(o.choices) && o.choices.length === 0

/** Events a stream opens with before it carries output. */
const PREAMBLE = new Set(['message_start', 'ping', 'response.created', 'response.in_progress', 'response.queued'])

/** An event's data (its data lines joined), or null when it has none (a comment). */
function dataOf(event: string): string | null {
  let data: string | null = null
  for (const l of event.split(LINE_END)) if (l.startsWith('data:')) data = data === null ? l.slice(5).trimStart() : `${data}\n${l.slice(5).trimStart()}`
  return data
}

/**
 * The offset of the first byte that may change what `inspect` does with its event, or -1: the usage
 * of every API sits under a `"usage"` key (or one spelt with a \u escape), and an Anthropic
 * `message_start` resets the input side even without one. Searched in the bytes: UTF-8 never puts
 * an ASCII byte inside a character.
 */
function firstMark(c: Uint8Array, kind: ApiKind): number {
  const at = earliest(indexOfBytes(c, USAGE_KEY), indexOfBytes(c, ESCAPE))
  return kind === 'messages' ? earliest(at, indexOfBytes(c, MESSAGE_START)) : at
}

const earliest = (a: number, b: number) => (a === -1 ? b : b === -1 ? a : Math.min(a, b))

/**
 * The quick form of wholeEventsBefore(c, -1) === c.byteLength for the usual chunk: it ends in
 * "\n\n" or "\r\n\r\n" after a byte that is no line break, where the split ends an event.
 */
function endsOneEvent(c: Uint8Array): boolean {
  const n = c.byteLength
  if (n < 3 || c[n - 1] !== LF) return false
  const before = c[n - 2] === LF ? n - 3 : c[n - 2] === CR && c[n - 3] === LF && c[n - 4] === CR ? n - 5 : -1
  return before >= 0 && c[before] !== LF && c[before] !== CR
}

/**
 * For a chunk that starts an event: the end of its last whole event that ends before `mark` (the
 * whole chunk's when mark is -1), 0 when none does. Events end where EVENT_END splits them: the
 * leftmost \r?\n\r?\n, found from one line feed to the next.
 */
function wholeEventsBefore(c: Uint8Array, mark: number): number {
  const limit = mark === -1 ? c.byteLength : mark
  let cut = 0
  for (let end = nextEventEnd(c, 0); end !== -1 && end <= limit; end = nextEventEnd(c, end)) cut = end
  return cut
}

/**
 * Just past the first event end (EVENT_END: the leftmost \r?\n\r?\n, found from one line feed to
 * the next) at or after `from`, or -1.
 */
function nextEventEnd(c: Uint8Array, from: number): number {
  for (let lf = c.indexOf(LF, from); lf !== -1; lf = c.indexOf(LF, lf + 1)) {
    // Whether the match starts at this line feed or at a carriage return before it, it ends the same.
    const i = lf + 1
    if (c[i] === LF) return i + 1
    if (c[i] === CR && c[i + 1] === LF) return i + 2
  }
  return -1
}

/** The most of a cut event carried as bytes to the next chunk; a longer one is read as text. */
const MAX_CARRY = 65_536
const EMPTY = new Uint8Array(0)

/** A chat chunk's event as OpenAI writes it: its one data line, an object. */
const DATA_OBJECT = Buffer.from('data: {', 'latin1')
const utf8 = Buffer.prototype.toString

/** Decodes whole events only (no character is ever split across its calls). */
const preambleDecoder = new TextDecoder()

/** a then b, copied only when both hold bytes (the meter's and the metered relay's joins). */
export function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (!b.byteLength) return a
  if (!a.byteLength) return b
  const out = new Uint8Array(a.byteLength + b.byteLength)
  out.set(a)
  out.set(b, a.byteLength)
  return out
}

/**
 * The body with `members` written into the usage object whose closing brace is at `close`, after
 * its last member (as insertionAt places them in a text): everything else as it came.
 */
function spliced(body: Buffer, close: number, members: string): Buffer {
  let at = close
  while (at > 0 && isSpaceByte(body[at - 1]!)) at--
  const text = body[at - 1] === 0x7b ? members : `,${members}`
  return Buffer.concat([body.subarray(0, at), Buffer.from(text, 'latin1'), body.subarray(at)])
}
const isSpaceByte = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09

/** `costs`: every usage object passed on to the client gains the call's cost (docs/api.md §7). */
export function meterFor(kind: ApiKind, stream: boolean, stripInjected: boolean, costs: CostWriter | null = null): UsageMeter {
  return stream ? new SseMeter(kind, stripInjected, costs) : new JsonMeter(kind, costs)
}
