/**
 * How deeply JSON nests. JSON.parse takes any depth, but the service's recursive walks over a
 * parsed value — JSON.stringify above all — overflow the stack somewhere past ten thousand levels
 * (a RangeError, answered INTERNAL), and 2 MB of `[` is a million levels. So a value is walked
 * recursively only up to MAX_JSON_DEPTH levels; deeper JSON is refused (input) or passed on as its
 * text (a provider's answer).
 */
import { stringEnd } from './json-members'

/** Levels of objects and arrays the service walks recursively; far above any real params or answer. */
export const MAX_JSON_DEPTH = 512

/**
 * Whether a JSON text opens more than `limit` objects or arrays inside each other. One pass over
 * the text, string contents skipped, no value built; a text too short to nest that deep is not read.
 */
export function nestsDeeperThan(text: string, limit: number): boolean {
  if (text.length <= limit) return false
  let depth = 0
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === '"') {
      i = stringEnd(text, i)
      if (i === -1) return false
    } else if (c === '{' || c === '[') {
      if (++depth > limit) return true
    } else if (c === '}' || c === ']') depth--
  }
  return false
}
