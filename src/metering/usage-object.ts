/**
 * Where a usage object sits in a provider's JSON text, so that the cost (docs/api.md §7) is written
 * into it and every other byte stays the provider's. A JSON walker over the text's structure only:
 * strings are skipped to their closing quote, values to their end, without building anything. On
 * bytes it is given their latin1 text (one character a byte: its offsets are the bytes'); JSON's
 * structural characters are ASCII, which UTF-8 never puts inside a character.
 */

/** The next character that opens or closes a value, or a string's quote. */
const STRUCTURE = /["{}[\]]/g
/** A string's end, or an escape inside it. */
const STRING_STOP = /["\\]/g
const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

function skipSpace(s: string, i: number): number {
  while (i < s.length && isSpace(s.charCodeAt(i))) i++
  return i
}

/** Just past the string whose opening quote is at `i`, or -1. */
function skipString(s: string, i: number): number {
  for (STRING_STOP.lastIndex = i + 1; ; ) {
    const m = STRING_STOP.exec(s)
    if (!m) return -1
    if (m[0] === '"') return m.index + 1
    STRING_STOP.lastIndex = m.index + 2
  }
}

/** Just past the value starting at `i` (no space before it), or -1. */
function skipValue(s: string, i: number): number {
  const c = s[i]
  if (c === '"') return skipString(s, i)
  if (c !== '{' && c !== '[') {
    // A number or a literal: up to the next delimiter.
    while (i < s.length && !',}] \t\n\r'.includes(s[i]!)) i++
    return i
  }
  let depth = 0
  for (STRUCTURE.lastIndex = i; ; ) {
    const m = STRUCTURE.exec(s)
    if (!m) return -1
    const ch = m[0]
    if (ch === '"') {
      const end = skipString(s, m.index)
      if (end === -1) return -1
      STRUCTURE.lastIndex = end
    } else if (ch === '{' || ch === '[') depth++
    else if (--depth === 0) return m.index + 1
  }
}

/**
 * The offset of the closing brace of the object at `path` (each key the last of its name in its
 * object, as JSON.parse keeps it) in the JSON object starting at `start`; -1 when there is none,
 * it is no object, or the text is not JSON the walk can follow.
 */
export function objectEndAt(s: string, start: number, path: readonly string[]): number {
  let at = skipSpace(s, start)
  for (const key of path) {
    const value = lastMember(s, at, key)
    if (value === -1 || s[value] !== '{') return -1
    at = value
  }
  const end = skipValue(s, at)
  return end === -1 ? -1 : end - 1
}

/** Where the value of the object at `i`'s last member named `key` starts, or -1. */
function lastMember(s: string, i: number, key: string): number {
  if (s[i] !== '{') return -1
  let found = -1
  i = skipSpace(s, i + 1)
  if (s[i] === '}') return -1
  for (;;) {
    if (s[i] !== '"') return -1
    const keyEnd = skipString(s, i)
    if (keyEnd === -1) return -1
    const raw = s.slice(i + 1, keyEnd - 1)
    // A key spelt with an escape is read as JSON.parse reads it (latin1 text: only ASCII escapes match).
    const name = raw.includes('\\') ? parsedKey(s.slice(i, keyEnd)) : raw
    i = skipSpace(s, keyEnd)
    if (s[i] !== ':') return -1
    const value = skipSpace(s, i + 1)
    const end = skipValue(s, value)
    if (end === -1) return -1
    if (name === key) found = value
    i = skipSpace(s, end)
    if (s[i] === '}') return found
    if (s[i] !== ',') return -1
    i = skipSpace(s, i + 1)
  }
}

function parsedKey(quoted: string): string | null {
  try {
    return JSON.parse(quoted) as string
  } catch {
    return null
  }
}

/**
 * The members to write into the object whose closing brace is at `close`: placed right after its
 * last member (before any space the provider left ahead of the brace), with a comma unless the
 * object is empty. Returns where they go and the text to put there.
 */
export function insertionAt(s: string, close: number, members: string): { at: number; text: string } {
  let at = close
  while (at > 0 && isSpace(s.charCodeAt(at - 1))) at--
  return { at, text: s[at - 1] === '{' ? members : `,${members}` }
}
