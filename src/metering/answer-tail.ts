/**
 * The usage of a plain JSON answer read from its end, without parsing the whole answer: a provider
 * puts `usage` among the answer's last top-level members (OpenAI chat after `choices`, before
 * `service_tier` and `system_fingerprint`; embeddings and Anthropic last of all), and an answer can
 * be as large as the response cap (2 MB of embeddings: milliseconds of the event loop to parse).
 *
 * Exact, or it declines (undefined) and the caller parses the whole answer: the last `"usage"` key
 * of the answer's last bytes counts only when its value is an object followed by nothing but scalar
 * members and the answer's closing brace. Then it is a member of the top-level object (nothing opens
 * or closes between it and the last brace), and the last one, as JSON.parse would read it (no later
 * `usage` member, however spelt: a later key with an escape declines). A raw `"usage":` cannot sit
 * inside a JSON string (its quotes would be escaped), wherever the window starts.
 */
import { SCALAR_MEMBERS_TO_END } from './scalar-members'
import { USAGE_KEY } from './sse-marks'
import { asBuffer } from '../bytes'

const TAIL_WINDOW = 8192
const OPEN = 0x7b
const CLOSE = 0x7d
const OPEN_LIST = 0x5b
const CLOSE_LIST = 0x5d
const QUOTE = 0x22
const BACKSLASH = 0x5c
const COLON = 0x3a
const isSpace = (b: number | undefined) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09

/** The answer's `usage` value (undefined: not readable from the end; the caller parses it all). */
export function usageFromEnd(chunks: Uint8Array[]): unknown {
  return usageAtTail(chunks)?.value
}

/**
 * usageFromEnd's value, with the offset in the whole answer of the usage object's closing brace
 * (where the cost is written: docs/api.md §7); undefined where usageFromEnd declines.
 */
export function usageAtTail(chunks: Uint8Array[]): { value: unknown; close: number } | undefined {
  const tail = lastBytes(chunks, TAIL_WINDOW)
  const key = tail.lastIndexOf(USAGE_KEY)
  if (key === -1) return undefined
  let i = key + USAGE_KEY.byteLength
  while (isSpace(tail[i])) i++
  if (tail[i] !== COLON) return undefined
  i++
  while (isSpace(tail[i])) i++
  if (tail[i] !== OPEN) return undefined
  const end = closingOf(tail, i)
  if (end === -1 || !SCALAR_MEMBERS_TO_END.test(tail.toString('latin1', end + 1))) return undefined
  let total = 0
  for (const c of chunks) total += c.byteLength
  try {
    return { value: JSON.parse(tail.toString('utf8', i, end + 1)), close: total - tail.byteLength + end }
  } catch {
    return undefined
  }
}

/** The index of the brace that closes the object opening at `from`, or -1. */
function closingOf(b: Buffer, from: number): number {
  let depth = 0
  for (let i = from; i < b.byteLength; i++) {
    const c = b[i]
    if (c === QUOTE) {
      for (i++; i < b.byteLength && b[i] !== QUOTE; i++) if (b[i] === BACKSLASH) i++
    } else if (c === OPEN || c === OPEN_LIST) depth++
    else if (c === CLOSE || c === CLOSE_LIST) {
      if (--depth === 0) return c === CLOSE ? i : -1
    }
  }
  return -1
}

/** The last `n` bytes of the chunks or more (whole chunks), copied only when more than one holds them. */
function lastBytes(chunks: Uint8Array[], n: number): Buffer {
  let k = chunks.length
  let total = 0
  while (k > 0 && total < n) total += chunks[--k]!.byteLength
  return k === chunks.length - 1 ? asBuffer(chunks[k]!) : Buffer.concat(chunks.slice(k))
}
