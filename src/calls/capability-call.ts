/**
 * The front door of a paid call (`POST /v1/call/{slug}`, and MCP's call_capability): the capability,
 * its params, a metered call's model and ceiling — checked before anything is charged — then the paid
 * request (paid-request/capability.ts: the debit, the provider, settle once). A keyed retry its
 * checks now refuse gets its stored answer.
 * errors: UNKNOWN_API, API_PAUSED, API_UNAVAILABLE, BAD_REQUEST, and those of payCapability.
 */
import { refusalAfterAdmission } from '../auth/refusal-after-admission'
import type { Principal } from '../auth/principal'
import { checkText } from '../edge/text'
import { ApiError } from '../errors'
import { readMeteredRequest } from '../metering/request'
import { payCapability } from '../paid-request/capability'
import type { RunBudget } from '../paid-request/run-header'
import type { Services } from '../services'
import type { ProviderKeys } from '../vault/provider-key'

/**
 * An Idempotency-Key (the header on POST /v1/call, `idempotency_key` over MCP): 1 to 255 printable
 * ASCII characters, no spaces. One source for the REST check and the MCP tool's JSON Schema.
 */
export const IDEMPOTENCY_KEY_PATTERN = '^[\\x21-\\x7e]{1,255}$'
export const IDEMPOTENCY_KEY = new RegExp(IDEMPOTENCY_KEY_PATTERN)

export interface CallInput {
  principal: Principal
  slug: string
  /** The raw JSON body, as received (hashed for Idempotency-Key fingerprints). */
  rawBody: string
  idempotencyKey: string | null
  /** Aborts when the client goes away (a call with an Idempotency-Key is run to its end instead). */
  signal?: AbortSignal
  /** The run budget the call counts against (X-Budget-Run; MCP `_meta["pab/run"]`; docs/api.md §13c). */
  run?: RunBudget
}

export interface CallAnswer {
  status: number
  body: string
}

/** What a call is checked for before its debit: the capability, its params, a metered call's model and ceiling. */
function checkedCall(s: Services, input: CallInput) {
  const cap = s.catalog.require(input.slug)
  const params = parseParams(input.rawBody)
  // Params are the provider's free text: several lines pass, NUL and other controls do not.
  checkText(params, 'all')
  s.catalog.checkParams(cap, params)
  // A metered capability (docs/api.md §7) is charged by its tokens: the model and ceiling come from its params.
  const metering = s.catalog.meteredCapability(cap)
  const metered = metering ? readMeteredRequest(input.rawBody, metering.spec, metering.kind) : null
  if (metered?.stream) throw new ApiError('BAD_REQUEST', { field: 'stream', expected: 'absent or false (stream through the proxy instead)' })
  return { cap, params, metered }
}

export async function callCapability(s: Services, keys: ProviderKeys, input: CallInput): Promise<CallAnswer> {
  let checked: ReturnType<typeof checkedCall>
  try {
    // Synchronous: the call that passes them goes on without a promise of its own.
    checked = checkedCall(s, input)
  } catch (refused) {
    try {
      await refusalAfterAdmission(s, input.principal, () => {
        throw refused
      })
    } catch (e) {
      // The checks' own refusal, told apart from the admission's (a killed agent, a spent limit).
      const stored = e === refused && e instanceof ApiError ? await storedAnswer(s, input) : null
      if (stored !== null) return { status: 200, body: stored }
      throw e
    }
    throw refused
  }
  // The fingerprint is read by an Idempotency-Key and by an agent's breaker; the owner's call without a key hashes nothing.
  const fp = input.idempotencyKey !== null || input.principal.agentId !== null ? fingerprint(checked.cap.slug, input.rawBody) : undefined
  return payCapability(s, keys, { ...checked, principal: input.principal, rawBody: input.rawBody, idempotencyKey: input.idempotencyKey, signal: input.signal, run: input.run, fingerprint: fp })
}

/**
 * The stored answer of a keyed request its checks now refuse, though its first run passed them: the
 * capability was paused since (a spend alarm pauses it right after the call that crossed it), made
 * unavailable or taken out of the catalog. The retry of a call whose answer was lost must get that
 * answer (docs/api.md §5), not API_PAUSED's "try another slug", which would buy the call twice. Read
 * only after the refusal's admission (refusalAfterAdmission: agent state and rate limit, counted
 * once); the allowlists, which debit.lua weighs before a replay, are not weighed again here: the
 * answer is the token's own (its key's scope), already given to it once.
 */
async function storedAnswer(s: Services, input: CallInput): Promise<string | null> {
  if (!input.idempotencyKey) return null
  const { accountId, agentId } = input.principal
  const [fp, state, response] = await s.ctx.redis.hmget(s.ctx.keys.idempotency(accountId, agentId, input.idempotencyKey), 'fp', 'state', 'response')
  return state === 'done' && fp === fingerprint(input.slug, input.rawBody) ? (response ?? null) : null
}

function parseParams(raw: string): unknown {
  if (raw.trim() === '') return {}
  try {
    return JSON.parse(raw)
  } catch {
    throw new ApiError('BAD_REQUEST', { field: 'body', expected: 'a JSON object of the capability params' })
  }
}

/** Bun's one-shot SHA-256 of the joined text: the digest node:crypto's three updates gave, at a sixth of the cost. */
function fingerprint(slug: string, rawBody: string): string {
  return Bun.SHA256.hash(`${slug}\n${rawBody}`, 'base64url')
}
