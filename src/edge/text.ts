/**
 * Free text at the edge. Control characters and lone UTF-16 surrogates have no business in a name,
 * an e-mail, a URL or a note: Postgres refuses NUL in text (a 500 where a 400 belongs), a newline
 * forges log lines and e-mail headers, a lone surrogate turns into U+FFFD on its way to UTF-8 (so
 * what is stored is not what was sent). So every string of a request (body, query, path, form) is
 * checked once, here, and refused with BAD_REQUEST naming the field:
 * - a line (the default): no C0 control (U+0000–U+001F, tab and newline included), no DEL or C1
 *   control (U+007F–U+009F), no lone surrogate;
 * - free text marked multi-line in its schema (`FreeText`, or every string under a `FreeJson`): the
 *   same, except that \n and \t pass.
 * The walk is recursive, so it is also where a value nested deeper than MAX_JSON_DEPTH (512) levels
 * of objects and arrays is refused, naming the top-level field it sits in: JSON.parse takes 20,000
 * levels in a 40 KB body, and the walk (or any later one) would overflow the stack on them — an
 * INTERNAL where a 400 belongs.
 * errors: BAD_REQUEST.
 */
import { Type as T, type SchemaOptions, type StringOptions } from '@sinclair/typebox'
import { ApiError } from '../errors'
import { MAX_JSON_DEPTH } from '../json-depth'

// Without the `u` flag a regex sees UTF-16 code units: a surrogate is lone unless it is the high
// half followed by the low half.
// A one-line field (a name, a label, an address) also refuses the bidirectional embeddings,
// overrides and isolates (U+202A–U+202E, U+2066–U+2069): shown in the console, the agent list or the
// operator chat, `inv\u202eexe.txt` reads as `invtxt.exe`, one agent's name can pass for another's.
// The marks a right-to-left name may need (U+200E, U+200F, U+061C) stay allowed; multi-line text
// (a support summary, a Telegram message, call params) is prose and keeps them all.
const LINE_BAD = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
const MULTILINE_BAD = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

export const LINE_EXPECTED = 'text without control characters or bidirectional overrides'
const MULTILINE_EXPECTED = 'text without control characters (newline and tab allowed)'
const DEPTH_EXPECTED = `JSON nested at most ${MAX_JSON_DEPTH} levels deep (objects and arrays)`

/** The schema mark of multi-line free text (an OpenAPI extension, so the document stays valid). */
const MULTILINE = 'x-multiline'

/** A multi-line free-text field (a support summary, a note): \n and \t allowed, other controls not. */
export const FreeText = (options: StringOptions = {}) => T.String({ ...options, [MULTILINE]: true })

/**
 * Any JSON whose strings are free text, several lines each (a capability's params, checked as the
 * REST call checks its body); its object keys stay single lines.
 */
export const FreeJson = (options: SchemaOptions = {}) => T.Unknown({ ...options, [MULTILINE]: true })

/** Which fields may hold several lines: `'all'`, or the dotted paths a body schema marks. */
export type Multiline = 'all' | ReadonlySet<string>

/** The dotted paths of the FreeText fields of a body schema (objects, optionals, unions, intersections). */
export function multilinePaths(schema: unknown): ReadonlySet<string> {
  const out = new Set<string>()
  const walk = (s: unknown, path: string) => {
    if (!s || typeof s !== 'object') return
    const o = s as Record<string, unknown>
    if (o[MULTILINE] === true) out.add(path)
    for (const k of ['anyOf', 'allOf', 'oneOf'] as const) if (Array.isArray(o[k])) for (const b of o[k] as unknown[]) walk(b, path)
    if (o.properties && typeof o.properties === 'object')
      for (const [k, v] of Object.entries(o.properties as Record<string, unknown>)) walk(v, path ? `${path}.${k}` : k)
  }
  walk(schema, '')
  return out
}

/**
 * Throws checkText's BAD_REQUEST for objects and arrays nested more than MAX_JSON_DEPTH levels deep,
 * and nothing else. For the body's parser (edge/body.ts): the schema validates a body before
 * checkText runs, and Elysia's refusal of a field the schema types (an `origin` sent as 5,000 nested
 * arrays) writes the value into its message with JSON.stringify, which overflows the stack: a 500,
 * before any admission, for anyone, on any route with a body.
 */
export function checkDepth(value: unknown): void {
  const visit = (v: unknown, depth: number, member: string) => {
    if (!v || typeof v !== 'object') return
    if (depth === MAX_JSON_DEPTH) throw new ApiError('BAD_REQUEST', { field: member || 'body', expected: DEPTH_EXPECTED })
    for (const [k, x] of Object.entries(v)) visit(x, depth + 1, member || k)
  }
  visit(value, 0, '')
}

/**
 * Throws BAD_REQUEST for the first string (or object key) of `value` holding a control character
 * or a lone surrogate, or for objects and arrays nested more than MAX_JSON_DEPTH levels deep (`value`
 * itself the first level). `prefix` names where the value sits ('' for a body's top level).
 */
/** The default: no path is multi-line (one set for every call, not a new one each). */
const NO_MULTILINE: ReadonlySet<string> = new Set()

export function checkText(value: unknown, multiline: Multiline = NO_MULTILINE, prefix = ''): void {
  // `within`: under a path marked multi-line (a FreeJson), every string is free text. `depth`: how
  // many objects and arrays hold `v`; `member`: the top-level field they sit in, named on a refusal
  // of depth (the full path would be hundreds of segments long).
  const visit = (v: unknown, path: string, within: boolean, depth: number, member: string) => {
    const multi = within || multiline === 'all' || multiline.has(path)
    if (typeof v === 'string') {
      if ((multi ? MULTILINE_BAD : LINE_BAD).test(v)) throw new ApiError('BAD_REQUEST', { field: path || 'body', expected: multi ? MULTILINE_EXPECTED : LINE_EXPECTED })
      return
    }
    if (!v || typeof v !== 'object') return
    if (depth === MAX_JSON_DEPTH) throw new ApiError('BAD_REQUEST', { field: member || 'body', expected: DEPTH_EXPECTED })
    if (Array.isArray(v)) {
      v.forEach((x, i) => {
        const at = path ? `${path}.${i}` : String(i)
        visit(x, at, multi, depth + 1, member || at)
      })
      return
    }
    // Own enumerable keys, as Object.entries gives them, without its array of pairs.
    for (const k in v) {
      if (!Object.hasOwn(v, k)) continue
      const at = path ? `${path}.${k}` : k
      if (LINE_BAD.test(k)) throw new ApiError('BAD_REQUEST', { field: at, expected: LINE_EXPECTED })
      visit((v as Record<string, unknown>)[k], at, multi, depth + 1, member || at)
    }
  }
  visit(value, prefix, false, 0, prefix)
}
