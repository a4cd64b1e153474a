/**
 * The `X-Budget-Run` header (docs/api.md §13c): `<run id>; max=<credits>; ttl=<seconds>` on a paid
 * call of an agent token names the run the call counts against (MCP: `_meta["pab/run"]`, the same
 * value). Parsed at the front door, before anything is charged.
 * errors: BAD_REQUEST with `field: "X-Budget-Run"` (malformed, or sent with the owner token).
 */
import type { Principal } from '../auth/principal'
import { ApiError } from '../errors'

export const RUN_HEADER = 'X-Budget-Run'
export const RUN_ID = /^[A-Za-z0-9_.:-]{1,64}$/
export const RUN_TTL_DEFAULT_S = 3600
export const RUN_TTL_MAX_S = 7 * 86400
/** A run's record stays listable this long past its end (docs/api.md §13c). */
export const RUN_KEPT_S = 7 * 86400

export interface RunBudget {
  id: string
  max: number
  ttlS: number
}

const EXPECTED = '<run id>; max=<credits>; ttl=<seconds> (run id 1-64 of A-Z a-z 0-9 _ . : -, max an integer >= 0, ttl 1..604800, default 3600)'

/** Where the value came from: the header, or MCP's `_meta["pab/run"]`. */
export const RUN_META = '_meta["pab/run"]'

// The format, then what is wrong: the message reads "X-Budget-Run must be <format>: <what is wrong>".
const malformed = (field: string, reason: string) => new ApiError('BAD_REQUEST', { field, expected: `${EXPECTED}: ${reason}` })

/** The run a paid call names, or undefined without one; refused for the owner token. */
export function runBudgetOf(value: unknown, principal: Principal, field: string = RUN_HEADER): RunBudget | undefined {
  if (value === null || value === undefined) return undefined
  if (typeof value !== 'string') throw malformed(field, 'a string')
  const run = parseRunHeader(value, field)
  if (principal.agentId === null) throw malformed(field, 'a run is opened by an agent token; the owner token has none')
  return run
}

export function parseRunHeader(value: string, field: string = RUN_HEADER): RunBudget {
  const refuse = (reason: string) => malformed(field, reason)
  // A header cannot carry them, an MCP string can: refused rather than trimmed away.
  if (/[\x00-\x08\x0a-\x1f\x7f]/.test(value)) throw refuse('no control characters')
  const [head, ...params] = value.split(';').map((p) => p.trim())
  if (!head || !RUN_ID.test(head)) throw refuse('the run id must be 1 to 64 of A-Z a-z 0-9 _ . : -')
  const seen = new Map<string, number>()
  for (const p of params) {
    const m = /^(max|ttl)\s*=\s*(\d{1,15})$/.exec(p)
    if (!m) throw refuse(`unreadable parameter "${p.slice(0, 40)}": only max=<integer> and ttl=<integer>`)
    if (seen.has(m[1]!)) throw refuse(`${m[1]} given twice`)
    seen.set(m[1]!, Number(m[2]))
  }
  const max = seen.get('max')
  if (max === undefined) throw refuse('max=<credits> is required')
  const ttlS = seen.get('ttl') ?? RUN_TTL_DEFAULT_S
  if (ttlS < 1 || ttlS > RUN_TTL_MAX_S) throw refuse(`ttl must be 1..${RUN_TTL_MAX_S} seconds`)
  return { id: head, max, ttlS }
}
