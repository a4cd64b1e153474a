/**
 * The paid call (`POST /v1/call/{slug}`): validate → open the paid request (the debit) → the provider
 * key, read only now (none: the call settles as no_key) → upstream with a timeout (the one provider
 * request, upstream/request.ts) → settle once, by
 * the outcome table both paid paths share (ledger/paid-call).
 * errors: UNKNOWN_API, API_PAUSED, API_UNAVAILABLE, BAD_REQUEST, every denial of debit.lua (AGENT_KILLED
 *         with reason breaker included), PAYMENT_REQUIRED, BYOK_REQUIRED, VAULT_UNAVAILABLE,
 *         KEY_UNREADABLE (these three refunded), PROVIDER_ERROR (refunded), RESPONSE_TOO_LARGE (refunded).
 */
import { createHash } from 'node:crypto'
import { refusalAfterAdmission } from '../auth/refusal-after-admission'
import type { Principal } from '../auth/principal'
import { checkText } from '../edge/text'
import { ApiError } from '../errors'
import { isRefunded, openPaidCall, providerFailure, usageAtSettle, type RunBudget } from '../ledger/paid-call'
import type { Services } from '../services'
import { callUpstream, type UpstreamResult } from '../upstream/call'
import { clientGone } from '../upstream/request'
import type { ProviderKeys } from '../vault/provider-key'
import { endUserId } from '../metering/end-user'
import { forwardedBody, readMeteredRequest, type MeteredRequest } from '../metering/request'
import { estimatedUsage, usageOfAnswer, type MeteredUsage } from '../metering/usage'
import { debitMetering } from '../proxy/metered'
import { costFields, exactCostMicro, type TokenPrices } from '../metering/cost'
import type { RunState } from '../lua/debit'

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
  // The checks' own refusal, told apart from the admission's (a killed agent, a spent limit).
  let refused: unknown = null
  try {
    checked = await refusalAfterAdmission(s, input.principal, () => {
      try {
        return checkedCall(s, input)
      } catch (e) {
        throw (refused = e)
      }
    })
  } catch (e) {
    const stored = e === refused && e instanceof ApiError ? await storedAnswer(s, input) : null
    if (stored !== null) return { status: 200, body: stored }
    throw e
  }
  const { cap, params, metered } = checked

  const { principal } = input
  // The same hash serves the Idempotency-Key check and the breaker's identical-requests rule.
  const requestFingerprint = fingerprint(cap.slug, input.rawBody)
  const opened = await openPaidCall(s, {
    principal,
    target: cap.slug,
    price: metered ? 0 : cap.price,
    unpriced: !metered && cap.lane === 'free',
    metered: metered ? debitMetering(metered) : undefined,
    idempotency: input.idempotencyKey ? { key: input.idempotencyKey, fingerprint: requestFingerprint } : undefined,
    fingerprint: requestFingerprint,
    // The upstream call cannot outlive its timeout; a minute past it the request was cut off.
    abandonAfterMs: cap.timeout_ms + 60_000,
    run: input.run,
  })
  if (opened.kind === 'replay') return { status: 200, body: opened.response }
  const { call } = opened
  const provider = s.catalog.providers.get(cap.provider)!
  const apiKey = await call.keyOrVoid(() => keys.keyFor({ kind: 'capability', capability: cap, provider }, principal.accountId))

  const clampTo = metered && call.metered?.clamped ? call.metered.maxOut : null
  const sent = clampTo !== null && metered?.ceilingField ? { ...(params as Record<string, unknown>), [metered.ceilingField]: clampTo } : params
  // A body goes to the provider as the caller wrote it (a 64-bit id parsed and serialised again
  // would arrive rounded), the clamp spliced in as the proxy splices it.
  // A metered call on the house key carries the account's end-user id, not the caller's (docs/api.md §12).
  const endUser = metered && cap.lane === 'house' ? endUserId(s.endUserSecret, principal.accountId) : null
  const json = metered && (clampTo !== null || endUser) ? forwardedBody(input.rawBody, metered, { clampTo, injectUsage: false, endUser }) : input.rawBody.trim() === '' ? '{}' : input.rawBody
  // A client that sent an Idempotency-Key means to retry what it does not hear: the call runs to its
  // end when the client goes away, and its answer is stored for that retry. Aborted instead, it was
  // charged (client_closed) and its key freed, so the retry was charged a second time.
  const signal = input.idempotencyKey ? undefined : input.signal
  const up = await callUpstream(provider, cap, { value: sent, json }, apiKey, s.cfg.PROXY_MAX_RESPONSE_BYTES, signal)
  const { outcome } = up
  const httpStatus = up.kind === 'failed' ? null : up.status
  const usage = metered ? usageOf(metered, up) : undefined
  if (clientGone(outcome)) {
    // Nobody is left to read an answer; the call is settled all the same (client_closed charged,
    // as on the proxy; not_sent refunded: the provider was never asked).
    await call.settle(outcome, { httpStatus, usage })
    return { status: 499, body: '' }
  }
  if (up.kind !== 'response' || isRefunded(outcome)) {
    const settled = await call.settle(outcome, { httpStatus })
    throw providerFailure(call, settled, { providerStatus: httpStatus, cap: s.cfg.PROXY_MAX_RESPONSE_BYTES })
  }
  // Charged (a 2xx, a 304, a 4xx: the caller's fault): the provider's answer passes through in `result`.
  // A metered call's charge is known only once settled: the settle hands it to the answer.
  // A JSON answer is spliced in as the provider wrote it (upstream/call.ts, `json`).
  const settledUsage = metered && usage ? usageWithCost(usage, debitMetering(metered), s.cfg.CREDITS_PER_USD) : undefined
  const answer = (balance: number, charged: number) => {
    const head = { call_id: call.callId, slug: cap.slug, charged, balance, provider_status: up.status, ...(settledUsage ? { usage: settledUsage } : {}), ...runFields(call.runState, call.price - charged) }
    return up.json === null ? JSON.stringify({ ...head, result: up.body }) : `${JSON.stringify(head).slice(0, -1)},"result":${up.json}}`
  }
  const settled = await call.settle(outcome, { httpStatus, usage, replay: answer })
  return { status: 200, body: settled.replay ?? answer(settled.balance, settled.charged) }
}

/**
 * The run the call counted against, as the answer shows it (docs/api.md §13c): its spend once this
 * call is settled (a metered call's release given back), as of this call.
 */
function runFields(run: RunState | undefined, released: number) {
  if (!run) return {}
  return { run: { id: run.id, max: run.max, spent: run.spent - released, expires_at: new Date(run.expiresAt).toISOString() } }
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

/**
 * The usage a metered call is settled with, as its answer shows it (docs/api.md §7 and §10): the
 * counts, where they came from, and the exact cost they are charged from (before the remainder).
 */
function usageWithCost(u: MeteredUsage, prices: TokenPrices, creditsPerUsd: number) {
  return { ...u.tokens, source: u.source, ...costFields(exactCostMicro(u.tokens, prices), creditsPerUsd) }
}

/** The provider's usage in its answer, by the rule both paths settle with (usageAtSettle). */
function usageOf(m: MeteredRequest, up: UpstreamResult): MeteredUsage {
  return usageAtSettle(up.outcome, up.kind === 'response' ? usageOfAnswer(m.kind, up.body) : null, () => estimatedUsage(m.inputBound, 0))
}

function parseParams(raw: string): unknown {
  if (raw.trim() === '') return {}
  try {
    return JSON.parse(raw)
  } catch {
    throw new ApiError('BAD_REQUEST', { field: 'body', expected: 'a JSON object of the capability params' })
  }
}

function fingerprint(slug: string, rawBody: string): string {
  return createHash('sha256').update(slug).update('\n').update(rawBody).digest('base64url')
}
