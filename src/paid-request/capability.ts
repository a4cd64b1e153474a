/**
 * A capability call past its checks (calls/capability-call.ts): open the paid request (the debit) →
 * the provider key, read only now (none: the call settles as no_key) → the provider, with a timeout
 * (upstream/call.ts, the one provider request) → settle once, by the outcome table both paid paths
 * share (outcome.ts) → the answer, stored for an Idempotency-Key's replay.
 * errors: every denial of debit.lua (AGENT_KILLED with reason breaker included), PAYMENT_REQUIRED,
 *         BYOK_REQUIRED, VAULT_UNAVAILABLE, KEY_UNREADABLE (these three refunded), PROVIDER_ERROR
 *         (refunded), RESPONSE_TOO_LARGE (refunded).
 */
import type { Principal } from '../auth/principal'
import type { RunState } from '../lua/debit'
import type { Capability, Provider } from '../catalog/catalog'
import { costFields, exactCostMicro, type TokenPrices } from '../metering/cost'
import { endUserId } from '../metering/end-user'
import { forwardedBody, type MeteredRequest } from '../metering/request'
import { estimatedUsage, usageOfAnswer, type MeteredUsage } from '../metering/usage'
import { callUpstream, type UpstreamResult } from '../upstream/call'
import { clientGone } from '../upstream/request'
import type { ProviderKeys } from '../vault/provider-key'
import { debitMetering } from './metered'
import { openPaidCall, type PaidCallDeps } from './open'
import { isRefunded, usageAtSettle } from './outcome'
import { providerFailure } from './provider-failure'
import type { RunBudget } from './run-header'

export interface CapabilityCallDeps extends PaidCallDeps {
  catalog: { providers: Map<string, Provider> }
  /** The key of the house lane's end-user ids (metering/end-user.ts). */
  endUserSecret: string
}

/** A capability call its front door has checked: the capability, its params, a metered call's request. */
export interface CheckedCapabilityCall {
  principal: Principal
  cap: Capability
  params: unknown
  metered: MeteredRequest | null
  /** The raw JSON body, as received. */
  rawBody: string
  idempotencyKey: string | null
  /**
   * Hash of the slug and body: the Idempotency-Key's fingerprint and the breaker's identical-requests
   * rule. Absent only where neither reads it: no Idempotency-Key, and the owner's token (no breaker).
   */
  fingerprint?: string
  /** Aborts when the client goes away (a call with an Idempotency-Key is run to its end instead). */
  signal?: AbortSignal
  /** The run budget the call counts against (docs/api.md §13c). */
  run?: RunBudget
}

export async function payCapability(s: CapabilityCallDeps, keys: ProviderKeys, input: CheckedCapabilityCall): Promise<{ status: number; body: string }> {
  const { cap, params, metered } = input
  const { principal } = input
  const requestFingerprint = input.fingerprint
  if (input.idempotencyKey && requestFingerprint === undefined) throw new Error('payCapability: an Idempotency-Key without its fingerprint')
  const opened = await openPaidCall(s, {
    principal,
    target: cap.slug,
    price: metered ? 0 : cap.price,
    unpriced: !metered && cap.lane === 'free',
    metered: metered ? debitMetering(metered) : undefined,
    idempotency: input.idempotencyKey ? { key: input.idempotencyKey, fingerprint: requestFingerprint! } : undefined,
    fingerprint: requestFingerprint,
    // The upstream call cannot outlive its timeout; a minute past it the request was cut off.
    abandonAfterMs: cap.timeout_ms + 60_000,
    // A byok capability goes out with the owner's key; house and free ones with the house's (docs/api.md §13d).
    lane: cap.lane === 'byok' ? 'owner' : 'house',
    run: input.run,
  })
  if (opened.kind === 'replay') return { status: 200, body: opened.response }
  const { call } = opened
  const provider = s.catalog.providers.get(cap.provider)!
  const target = { kind: 'capability', capability: cap, provider } as const
  const apiKey = keys.houseKeyNow(target) ?? (await call.keyOrVoid(() => keys.keyFor(target, principal.accountId)))

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
    // Its members in the answer's order, added where present (no spread copies a call).
    const head: Record<string, unknown> = { call_id: call.callId, slug: cap.slug, charged, balance, provider_status: up.status }
    if (settledUsage) head.usage = settledUsage
    if (call.runState) head.run = runOf(call.runState, call.price - charged)
    return up.json === null ? JSON.stringify({ ...head, result: up.body }) : `${JSON.stringify(head).slice(0, -1)},"result":${up.json}}`
  }
  const settled = await call.settle(outcome, { httpStatus, usage, replay: answer })
  return { status: 200, body: settled.replay ?? answer(settled.balance, settled.charged) }
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

/**
 * The run the call counted against, as the answer shows it (docs/api.md §13c): its spend once this
 * call is settled (a metered call's release given back), as of this call.
 */
function runOf(run: RunState, released: number) {
  return { id: run.id, max: run.max, spent: run.spent - released, expires_at: new Date(run.expiresAt).toISOString() }
}
