/**
 * Where a top-level member's value sits in the text of a JSON object, so that a forwarded body can
 * have one member's value replaced, or one member's value be forwarded alone (an MCP tool call's
 * params), and keep every byte as the client wrote it (a 64-bit seed, its own spacing). A reader of
 * text only: the caller checks what it builds by parsing it.
 */
const WS = ' \t\n\r'

const skipWs = (t: string, i: number) => {
  while (i < t.length && WS.includes(t[i]!)) i++
  return i
}

/** The index of the quote that closes the string opening at `i`, or -1. */
export function stringEnd(t: string, i: number): number {
  for (let j = t.indexOf('"', i + 1); j !== -1; j = t.indexOf('"', j + 1)) {
    let backslashes = 0
    while (t[j - 1 - backslashes] === '\\') backslashes++
    if (backslashes % 2 === 0) return j
  }
  return -1
}

/** Just past the value starting at `i`, or -1. */
function valueEnd(t: string, i: number): number {
  const c = t[i]
  if (c === '"') {
    const e = stringEnd(t, i)
    return e === -1 ? -1 : e + 1
  }
  if (c === '{' || c === '[') {
    let depth = 0
    for (let j = i; j < t.length; j++) {
      const d = t[j]
      if (d === '"') {
        j = stringEnd(t, j)
        if (j === -1) return -1
      } else if (d === '{' || d === '[') depth++
      else if ((d === '}' || d === ']') && --depth === 0) return j + 1
    }
    return -1
  }
  let j = i
  while (j < t.length && !',}] \t\n\r'.includes(t[j]!)) j++
  return j === i ? -1 : j
}

/**
 * The [start, end) of the value of the last top-level member named `key` (as JSON.parse keeps the
 * last), null when there is none or the text is not an object this reader follows (a key with an
 * escape is compared as written).
 */
export function topLevelValueSpan(t: string, key: string): [number, number] | null {
  let i = skipWs(t, 0)
  if (t[i] !== '{') return null
  let found: [number, number] | null = null
  i = skipWs(t, i + 1)
  if (t[i] === '}') return null
  for (;;) {
    if (t[i] !== '"') return null
    const keyEnd = stringEnd(t, i)
    if (keyEnd === -1) return null
    const name = t.slice(i + 1, keyEnd)
    i = skipWs(t, keyEnd + 1)
    if (t[i] !== ':') return null
    const start = skipWs(t, i + 1)
    const end = valueEnd(t, start)
    if (end === -1) return null
    if (name === key) found = [start, end]
    i = skipWs(t, end)
    if (t[i] === '}') return found
    if (t[i] !== ',') return null
    i = skipWs(t, i + 1)
  }
}

/** The text of the value of the last top-level member named `key` of the object `t`, or null. */
export function memberText(t: string | null, key: string): string | null {
  const span = t === null ? null : topLevelValueSpan(t, key)
  return span && t!.slice(span[0], span[1])
}

/**
 * `value`'s JSON as the client wrote it — `written`, cut out of its request — when that parses to
 * the same value (a 64-bit id parsed and serialised again would be rounded); else serialised.
 */
export function asWritten(written: string | null, value: unknown): string {
  return written !== null && parsesTo(written, value) ? written : JSON.stringify(value)
}

/** Whether `text` is JSON for `value`: the check that lets an edit of the text stand. */
export function parsesTo(text: string, value: unknown): boolean {
  try {
    return Bun.deepEquals(JSON.parse(text), value)
  } catch {
    return false
  }
}
