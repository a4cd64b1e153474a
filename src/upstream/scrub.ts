/**
 * Masks the injected provider key wherever an upstream echoes it back (an error message quoting
 * the key, a debug header) — in every spelling a client decodes back into it: the key itself, its
 * percent-encoding and its JSON escapes. Each mask has its spelling's length, so a Content-Length
 * stays true.
 *
 * Streaming-safe: a chunk's tail that could be the start of a spelling is held back until the next
 * chunk decides it. Only such a tail is held, so SSE events (ending in "\n\n", which no spelling
 * starts with) still leave at once.
 *
 * Where spellings overlap, the leftmost one is masked (the shortest, at one position), and the scan
 * goes on after it — the same however the body is cut, so the stream and `maskKey` agree.
 */
import { asBuffer, indexOfBytes } from '../bytes'
const STAR = 0x2a
const EMPTY = new Uint8Array(0)
/** RFC 3986's unreserved characters: no encoder rewrites them, so a key made of them has one spelling. */
const UNRESERVED = /^[A-Za-z0-9._~-]*$/

const hex = (b: number) => b.toString(16).padStart(2, '0')
const percent = (key: string, upper: boolean) =>
  [...key].map((c) => (UNRESERVED.test(c) ? c : [...Buffer.from(c)].map((b) => '%' + (upper ? hex(b).toUpperCase() : hex(b))).join(''))).join('')
const unicodeEscaped = (key: string, upper: boolean) =>
  [...key]
    .map((c) => {
      const code = c.charCodeAt(0)
      if (code > 0x7f || UNRESERVED.test(c)) return c
      const h = code.toString(16).padStart(4, '0')
      return '\\u' + (upper ? h.toUpperCase() : h)
    })
    .join('')

/**
 * Every distinct spelling of `key` that a JSON parser or a URL decoder turns back into it, shortest
 * first. JSON's `\u00xx` escape is taken for every character a percent-encoder rewrites: encoders
 * that escape more than `"` and `\` (`\/`, PHP's and .NET's `\u002B`) leave `-._~` alone.
 */
export function keySpellings(key: string): string[] {
  if (UNRESERVED.test(key)) return [key]
  const json = JSON.stringify(key).slice(1, -1)
  const all = new Set([
    key,
    encodeURIComponent(key),
    percent(key, true),
    percent(key, false),
    json,
    json.replaceAll('/', '\\/'),
    unicodeEscaped(key, false),
    unicodeEscaped(key, true),
  ])
  return [...all].sort((a, b) => a.length - b.length)
}

export function maskKey(text: string, key: string): string {
  return key ? maskSpellings(text, keySpellings(key)) : text
}

/** `maskKey` with the spellings built once, for a caller that masks many strings with one key. */
export function maskSpellings(text: string, spellings: readonly string[]): string {
  const key = spellings[0]!
  if (spellings.length === 1) return text.includes(key) ? text.split(key).join('*'.repeat(key.length)) : text
  let out = ''
  let pos = 0
  for (;;) {
    let at = -1
    let len = 0
    for (const s of spellings) {
      const i = text.indexOf(s, pos)
      if (i !== -1 && (at === -1 || i < at)) {
        at = i
        len = s.length
      }
    }
    if (at === -1) break
    out += text.slice(pos, at) + '*'.repeat(len)
    pos = at + len
  }
  return pos ? out + text.slice(pos) : text
}

export class KeyScrubber {
  /** Shortest first; `key` is the only one for a key of unreserved characters (the hot path). */
  private readonly spellings: Buffer[]
  private readonly key: Buffer
  private readonly longest: number
  private held: Uint8Array = EMPTY

  constructor(key: string) {
    this.spellings = keySpellings(key).map((s) => Buffer.from(s))
    this.key = this.spellings[0]!
    this.longest = this.spellings.at(-1)!.length
  }

  push(chunk: Uint8Array): Uint8Array {
    // The usual chunk, for a key of one spelling: no key in it, none begun at its end, nothing held.
    // It goes on as it came, searched without a Buffer view of it (src/bytes.ts).
    if (!this.held.byteLength && this.spellings.length === 1 && indexOfBytes(chunk, this.key) === -1 && !this.partialKeyAtEnd(chunk)) return chunk
    let buf = asBuffer(chunk)
    if (this.held.byteLength) buf = Buffer.concat([this.held, buf])
    if (this.spellings.length > 1) return this.pushSpellings(buf)
    let at = buf.indexOf(this.key)
    if (at !== -1) {
      // Never write into the upstream's buffer.
      if (!this.held.byteLength) buf = Buffer.from(buf)
      while (at !== -1) {
        buf.fill(STAR, at, at + this.key.length)
        at = buf.indexOf(this.key, at + this.key.length)
      }
    }
    const keep = this.partialKeyAtEnd(buf)
    this.held = keep ? Uint8Array.prototype.slice.call(buf, buf.length - keep) : EMPTY
    return keep ? buf.subarray(0, buf.length - keep) : buf
  }

  /** The held-back tail, at the end of the stream: no spelling starts in it, or one that ends in it is masked. */
  flush(): Uint8Array {
    const rest = this.held
    this.held = EMPTY
    // `rest` is our own copy; it may hold a whole spelling that a longer one's start held back.
    if (rest.byteLength && this.spellings.length > 1) this.scan(asBuffer(rest), true)
    return rest
  }

  private pushSpellings(buf: Buffer): Uint8Array {
    // Never write into the upstream's buffer.
    const own = this.held.byteLength ? buf : Buffer.from(buf)
    const hold = this.scan(own, false)
    this.held = hold < own.length ? Uint8Array.prototype.slice.call(own, hold) : EMPTY
    return hold < own.length ? own.subarray(0, hold) : own
  }

  /**
   * Masks, in place, each leftmost whole spelling before the first position where the rest of `buf`
   * could still grow into one; returns that position (`buf.length` if none, or at the stream's end).
   */
  private scan(buf: Buffer, final: boolean): number {
    let pos = 0
    let hold = final ? buf.length : this.partialFrom(buf, 0)
    for (;;) {
      let at = -1
      let len = 0
      for (const s of this.spellings) {
        const i = buf.indexOf(s, pos)
        if (i !== -1 && (at === -1 || i < at)) {
          at = i
          len = s.length
        }
      }
      // A longer spelling that started earlier may yet complete: the next chunk decides.
      if (at === -1 || at > hold) return hold
      buf.fill(STAR, at, at + len)
      pos = at + len
      if (hold < pos) hold = final ? buf.length : this.partialFrom(buf, pos)
    }
  }

  /** The earliest position from `pos` on where the rest of `buf` is a proper prefix of a spelling; `buf.length` if none. */
  private partialFrom(buf: Buffer, pos: number): number {
    for (let k = Math.min(this.longest - 1, buf.length - pos); k > 0; k--) {
      const start = buf.length - k
      for (const s of this.spellings)
        if (s.length > k && buf[start] === s[0] && buf.compare(s, 0, k, start, buf.length) === 0) return start
    }
    return buf.length
  }

  /** Length of the longest proper prefix of the key that `buf` ends with. */
  private partialKeyAtEnd(buf: Uint8Array): number {
    const key = this.key
    for (let k = Math.min(key.length - 1, buf.length); k > 0; k--) {
      const start = buf.length - k
      if (buf[start] !== key[0]) continue
      let i = 1
      while (i < k && buf[start + i] === key[i]) i++
      if (i === k) return k
    }
    return 0
  }
}
