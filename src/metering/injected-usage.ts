/**
 * The `"usage":null` member that OpenAI puts on every chat chunk once the usage option is on,
 * taken out of a chunk's bytes (or an event's text) when the proxy added the option and the client
 * did not ask for it (docs/api.md §7): exactly where parsing the event would have taken it out, and
 * the provider's bytes otherwise kept as sent. Anything this cannot prove is left to the parse.
 */
import { SCALAR_MEMBERS_TO_END } from './scalar-members'
import { bytes, CR, ESCAPE, LF, USAGE_KEY } from './sse-marks'
import { bytesAt, copyBytes, indexOfBytes } from '../bytes'

const NULL_USAGE_TEXT = ',"usage":null'
const NULL_USAGE = bytes(NULL_USAGE_TEXT)
/** The member with JSON's whitespace allowed around its tokens (the first in the text). */
const NULL_USAGE_SPACED = /,[ \t\n\r]*"usage"[ \t\n\r]*:[ \t\n\r]*null/
const DATA = bytes('data:')

/**
 * For an OpenAI chat chunk that starts an event: its leading whole events, up to `cut`, with the
 * `"usage":null` member the usage option adds to every chunk taken out of their bytes — what
 * inspect() would pass on for them, without decoding, parsing and serialising each chunk of the
 * stream again. The prefix stops at the first event that is not a single line that either holds
 * no mark (the meter's firstMark) or is a `data:` line whose only mark is a `,"usage":null`
 * followed by nothing but scalar members to the object's end (OpenAI sends its `obfuscation`
 * padding there): then the member is the top-level object's (nothing opens or closes between it
 * and the final brace, and its quotes are not escaped, so not inside a string). The provider's
 * bytes are otherwise kept. Walks from `from` (an event's start); adds each member's range to
 * `skips` (withoutSkips takes them out) and returns the prefix's end.
 */
export function injectedNulls(c: Uint8Array, from: number, skips: number[]): number {
  const b = c
  let cut = from
  // The next mark at or past `cut`, searched again only once passed: the walk stays linear in the chunk.
  let usage = indexOfBytes(b, USAGE_KEY, cut)
  let escape = indexOfBytes(b, ESCAPE, cut)
  for (;;) {
    if (usage !== -1 && usage < cut) usage = indexOfBytes(b, USAGE_KEY, cut)
    if (escape !== -1 && escape < cut) escape = indexOfBytes(b, ESCAPE, cut)
    const lf = b.indexOf(LF, cut)
    if (lf === -1) break
    // A single-line event ends at its first line feed: "\n\n" or "\r\n\r\n" (or a mix) follows its text.
    const end = b[lf + 1] === LF ? lf + 2 : b[lf + 1] === CR && b[lf + 2] === LF ? lf + 3 : -1
    if (end === -1) break
    const textEnd = lf > cut && b[lf - 1] === CR ? lf - 1 : lf
    if (escape !== -1 && escape < textEnd) break
    if (usage !== -1 && usage < textEnd) {
      const at = usage - 1
      const after = at + NULL_USAGE.byteLength
      if (at < cut || after > textEnd || !bytesAt(b, at, NULL_USAGE) || !bytesAt(b, cut, DATA) || !scalarMembersToEnd(b, after, textEnd)) break
      skips.push(at, after)
    }
    cut = end
  }
  return cut
}

/**
 * c[0, cut) without the ranges in `skips` (start, end pairs, in order: injectedNulls' members and
 * the usage chunks the meter dropped), then `tail` (what the meter passes on for the rest of the
 * chunk): written once. Under load a whole answer arrives in one read, and joining the stripped
 * prefix and the tail's bytes afterwards copied the answer twice.
 */
export function withoutSkips(c: Uint8Array, skips: number[], cut: number, tail: Uint8Array): Uint8Array {
  if (!skips.length && !tail.byteLength) return cut === c.byteLength ? c : c.subarray(0, cut)
  let len = cut + tail.byteLength
  for (let i = 0; i < skips.length; i += 2) len -= skips[i + 1]! - skips[i]!
  // A large chunk is rewritten in place, the bytes moved left only (len ≤ the chunk's length: the
  // tail comes from c[cut, end) and is never longer, or it is given a chunk of its own).
  const out = c.byteLength >= IN_PLACE_FROM && len <= c.byteLength ? c : Buffer.allocUnsafe(len)
  let from = 0
  let to = 0
  for (let i = 0; i < skips.length; i += 2) {
    to += copyBytes(c, out, to, from, skips[i]!)
    from = skips[i + 1]!
  }
  to += copyBytes(c, out, to, from, cut)
  // Buffer's copy moves overlapping bytes as memmove does: the tail may be a view of c past `to`.
  if (tail.byteLength) copyBytes(tail, out, to, 0, tail.byteLength)
  return out === c && len < c.byteLength ? c.subarray(0, len) : out
}

/**
 * From this many bytes a chunk is stripped in place rather than into a new one: a whole answer in
 * one read (a few KB) cost a fresh allocation and its garbage under load, where an in-place move
 * and the shorter view of it cost half (bench); below it, the view (JavaScriptCore then gives the
 * chunk an ArrayBuffer of its own, ~0.15 µs) costs more than a small pooled copy.
 */
const IN_PLACE_FROM = 2048

const QUOTE = 0x22
const BACKSLASH = 0x5c
const isKeyByte = (x: number) => (x >= 0x61 && x <= 0x7a) || (x >= 0x41 && x <= 0x5a) || (x >= 0x30 && x <= 0x39) || x === 0x5f
const isDigit = (x: number) => x >= 0x30 && x <= 0x39
const LITERALS = [bytes('null'), bytes('true'), bytes('false')]
const USAGE_NAME = bytes('usage')

/**
 * Whether b[i, end) is what may follow the injected member to the object's end: members with a
 * scalar value (a string without escapes, a number, true, false, null), none of them another
 * `usage`, then the closing brace. A UTF-8 character never holds a '"' or '\\' byte. (b[end] is
 * the event's line break, so a scan that reaches it stops.)
 */
function scalarMembersToEnd(b: Uint8Array, i: number, end: number): boolean {
  for (;;) {
    if (i === end - 1) return b[i] === 0x7d
    if (b[i] !== 0x2c || b[i + 1] !== QUOTE) return false
    const key = (i += 2)
    while (i < end && isKeyByte(b[i]!)) i++
    if (i === key || b[i] !== QUOTE || b[i + 1] !== 0x3a) return false
    if (i - key === USAGE_NAME.byteLength && bytesAt(b, key, USAGE_NAME)) return false
    i += 2
    if (b[i] === QUOTE) {
      i++
      while (i < end && b[i] !== QUOTE && b[i] !== BACKSLASH) i++
      if (b[i] !== QUOTE) return false
      i++
    } else if (b[i] === 0x2d || isDigit(b[i]!)) {
      if (b[i] === 0x2d) i++
      const digits = i
      while (i < end && isDigit(b[i]!)) i++
      if (i === digits) return false
      if (b[i] === 0x2e) {
        const frac = ++i
        while (i < end && isDigit(b[i]!)) i++
        if (i === frac) return false
      }
    } else {
      const lit = LITERALS.find((l) => bytesAt(b, i, l))
      if (!lit || i + lit.byteLength > end) return false
      i += lit.byteLength
    }
  }
}

/**
 * An event's text without the injected member, under the rule injectedNulls applies to bytes (for
 * a single-line `data:` event met in a chunk that did not start at an event's start, or written
 * with JSON's optional spaces, as Python servers of the OpenAI API write it), or null: the caller
 * parses the event.
 */
export function withoutInjectedNull(event: string): string | null {
  // The compact spelling is searched first: a plain search, where the regex costs ~10% more.
  let at = event.indexOf(NULL_USAGE_TEXT)
  let after = at + NULL_USAGE_TEXT.length
  if (at === -1) {
    const m = NULL_USAGE_SPACED.exec(event)
    if (!m) return null
    at = m.index
    after = at + m[0].length
  }
  if (event.indexOf('"usage"') !== event.indexOf('"', at) || event.includes('\\u')) return null
  return SCALAR_MEMBERS_TO_END.test(event.slice(after)) ? event.slice(0, at) + event.slice(after) : null
}
