/**
 * A call record as lua/debit.lua writes it, read into the fields of its hash shape whatever its shape.
 * The common call's record is one string: a flat call's `state|price|day|at|agent|chain|brk|target`,
 * a metered call's `m|metered|state|price|day|at|agent|chain|brk|max_out|clamped|p_in|p_cached|p_out|
 * p_cw|p_cw1h|<bytes of model>|model|target` (the model by its byte length and the target last, as
 * either may hold a '|'); filed, either becomes the bare word `filed`. Any other record is a hash.
 */

/** The fields a record holds, named as its hash names them (absent ones left out). */
export type CallFields = Record<string, string>

const PIPE = 0x7c
/** The fields of a flat string before its target, and of a metered one before its model's length. */
const FLAT_FIXED = ['state', 'price', 'day', 'at', 'agent', 'chain', 'brk'] as const
const METERED_FIXED = ['metered', 'state', 'price', 'day', 'at', 'agent', 'chain', 'brk', 'max_out', 'clamped', 'p_in', 'p_cached', 'p_out', 'p_cw', 'p_cw1h'] as const

/** The byte offsets just past each of the first `n` '|' of `raw`, or null when it has fewer. */
function pipes(raw: Buffer, from: number, n: number): number[] | null {
  const at: number[] = []
  let p = from
  while (at.length < n) {
    const i = raw.indexOf(PIPE, p)
    if (i < 0) return null
    at.push(i + 1)
    p = i + 1
  }
  return at
}

/** The fields `names` ends at, cut from `raw` between `start` and the pipes that end them. */
function fieldsOf(raw: Buffer, start: number, ends: number[], names: readonly string[], into: CallFields): void {
  let from = start
  names.forEach((name, i) => {
    const value = raw.toString('utf8', from, ends[i]! - 1)
    // The hash leaves an unset chain, brk or cache-write price out: so does this.
    if (value !== '' || name === 'agent') into[name] = value
    from = ends[i]!
  })
}

/**
 * A string record's fields (the hash's names; a metered one's `hold` '1', as its hash has it), or
 * 'filed' for a filed one; null for a string no debit writes (damaged).
 */
export function parseCallRecord(raw: Buffer): CallFields | 'filed' | null {
  if (raw.toString('utf8') === 'filed') return 'filed'
  const out: CallFields = {}
  if (raw[0] === 0x6d && raw[1] === PIPE) {
    // m|metered|…|p_cw1h|<bytes of model>|model|target
    const ends = pipes(raw, 2, METERED_FIXED.length + 1)
    if (!ends) return null
    fieldsOf(raw, 2, ends, METERED_FIXED, out)
    const length = Number(raw.toString('utf8', ends[METERED_FIXED.length - 1], ends[METERED_FIXED.length]! - 1))
    const modelAt = ends[METERED_FIXED.length]!
    if (!Number.isInteger(length) || length < 0 || raw[modelAt + length] !== PIPE) return null
    out.model = raw.toString('utf8', modelAt, modelAt + length)
    out.target = raw.toString('utf8', modelAt + length + 1)
    out.hold = '1'
    return out
  }
  const ends = pipes(raw, 0, FLAT_FIXED.length)
  if (!ends) return null
  fieldsOf(raw, 0, ends, FLAT_FIXED, out)
  out.target = raw.toString('utf8', ends[FLAT_FIXED.length - 1])
  return out
}

/** Which field of `names` a record lacks reads null, as HMGET answers. */
export function pick(fields: CallFields, names: readonly string[]): (string | null)[] {
  return names.map((n) => fields[n] ?? null)
}
