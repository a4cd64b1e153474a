/**
 * The paid call: validate → debit (one script: agent state, rate limit and the other gates) → the
 * provider key, read only now so that a refused token never reaches the vault (none: the debit is
 * voided) → upstream with a timeout → refund on provider failure (idempotent by call id) → file the
 * call's metadata.
 * errors: UNKNOWN_API, API_PAUSED, API_UNAVAILABLE, BAD_REQUEST, BYOK_REQUIRED, every denial of
 *         debit-13 (AGENT_KILLED with reason breaker included), PAYMENT_REQUIRED, PROVIDER_ERROR (refunded), RESPONSE_TOO_LARGE (refunded).
 */
import { createHash } from 'node:crypto'
import type { Principal } from '../../auth/principal'
import { ApiError } from '../../errors'
import { applyReferralBonus } from '../../ledger/accounts'
import { recordCall, type CallRecord } from '../../ledger/calls'
import { debit } from '../../ledger/debit'
import { refund } from '../../ledger/refund'
import { keyAfterDebit } from '../../ledger/void'
import type { Services } from '../../services'
import { paymentRequired } from '../../payments/payment-required'
import type { Capability } from '../../catalog/catalog'
import { lookupWithin, VAULT_UNAVAILABLE } from '../../vault/deadline'
import { callUpstream, type UpstreamResult } from '../../upstream/call'
import { checkText } from '../../edge/text'

/** How long a byok call waits for the vault before failing (Postgres down must not hang calls). */
const VAULT_DEADLINE_MS = 3000

export interface CallInput {
  principal: Principal
  slug: string
  /** The raw JSON body, as received (hashed for Idempotency-Key fingerprints). */
  rawBody: string
  idempotencyKey: string | null
}

export interface CallAnswer {
  status: number
  body: string
}

export async function callCapability(s: Services, input: CallInput): Promise<CallAnswer> {
  const cap = s.catalog.require(input.slug)
  const params = parseParams(input.rawBody)
  // Params are the provider's free text: several lines pass, NUL and other controls do not.
  checkText(params, 'all')
  s.catalog.checkParams(cap, params)

  const { principal } = input
  // The same hash serves the Idempotency-Key check and the breaker's identical-requests rule.
  const requestFingerprint = fingerprint(cap.slug, input.rawBody)
  const outcome = await debit(s.ctx, {
    principal,
    target: cap.slug,
    price: cap.price,
    unpriced: cap.lane === 'free',
    idempotency: input.idempotencyKey ? { key: input.idempotencyKey, fingerprint: requestFingerprint } : undefined,
    fingerprint: requestFingerprint,
    // The upstream call cannot outlive its timeout; a minute past it the request was cut off.
    abandonAfterMs: cap.timeout_ms + 60_000,
  })
  if (outcome.kind === 'replay') return { status: 200, body: outcome.response }
  if (outcome.kind === 'insufficient') throw await paymentRequired(s, principal.accountId, outcome.balance, outcome.price, { mandateRef: outcome.mandateRef })
  const settle = { principal, debit: outcome, target: cap.slug, price: cap.price, idempotencyKey: input.idempotencyKey ?? undefined }
  const apiKey = await keyAfterDebit(s.ctx, s.log, settle, () => providerKey(s, cap, principal.accountId))

  const started = performance.now()
  const up = await callUpstream(s.catalog.providers.get(cap.provider)!, cap, params, apiKey, s.cfg.PROXY_MAX_RESPONSE_BYTES)
  const latency = Math.round(performance.now() - started)
  const failed = up.kind !== 'response' || up.status >= 500
  const base: Omit<CallRecord, 'outcome' | 'refunded' | 'charged'> = {
    call_id: outcome.callId,
    slug: cap.slug,
    agent_id: principal.agentId,
    http_status: up.kind === 'response' || up.kind === 'too_large' ? up.status : null,
    latency_ms: latency,
    at: new Date(outcome.at).toISOString(),
  }

  if (failed) {
    const r = await refund(s.ctx, {
      accountId: principal.accountId,
      agentId: principal.agentId,
      callId: outcome.callId,
      day: outcome.day,
      reason: failureReason(up),
    })
    const rec: CallRecord = { ...base, charged: cap.price, refunded: true, outcome: failureReason(up) }
    void recordCall(s.ctx, principal.accountId, rec, { idempotencyKey: input.idempotencyKey ?? undefined }).catch((e) =>
      s.log.error('record_call_failed', { call_id: rec.call_id, error: String(e) }),
    )
    if (up.kind === 'too_large')
      throw new ApiError('RESPONSE_TOO_LARGE', { cap: s.cfg.PROXY_MAX_RESPONSE_BYTES, refunded: true, call_id: outcome.callId, balance: r.balance })
    throw new ApiError('PROVIDER_ERROR', {
      refunded: true,
      call_id: outcome.callId,
      provider_status: up.kind === 'response' ? up.status : null,
      balance: r.balance,
    })
  }

  // 2xx passes through; 4xx is the caller's fault: charged, passed through in `result`.
  const ok = up.status < 400
  let balance = outcome.balance
  if (ok && outcome.referrerId) balance = (await applyReferralBonus(s.ctx, principal.accountId, outcome.referrerId, outcome.callId)) ?? balance
  const body = JSON.stringify({
    call_id: outcome.callId,
    slug: cap.slug,
    charged: cap.price,
    balance,
    provider_status: up.status,
    result: up.body,
  })
  const rec: CallRecord = { ...base, charged: cap.price, refunded: false, outcome: ok ? 'ok' : 'provider_4xx' }
  const recorded = recordCall(s.ctx, principal.accountId, rec, input.idempotencyKey ? { idempotencyKey: input.idempotencyKey, replay: body } : {})
  // With an Idempotency-Key the stored answer must exist before the client can replay it;
  // without one, filing the metadata need not delay the answer.
  if (input.idempotencyKey) await recorded
  else void recorded.catch((e) => s.log.error('record_call_failed', { call_id: rec.call_id, error: String(e) }))
  return { status: 200, body }
}

function parseParams(raw: string): unknown {
  if (raw.trim() === '') return {}
  try {
    return JSON.parse(raw)
  } catch {
    throw new ApiError('BAD_REQUEST', { field: 'body', expected: 'a JSON object of the capability params' })
  }
}

async function providerKey(s: Services, cap: Capability, accountId: string): Promise<string> {
  const provider = s.catalog.providers.get(cap.provider)!
  if (cap.lane === 'byok') {
    // A byok call has no other key: if the vault (Postgres) cannot answer, fail fast, never hang.
    const key = await lookupWithin(s.vaultedKey, accountId, provider.id, VAULT_DEADLINE_MS)
    if (key === VAULT_UNAVAILABLE) throw new Error('the key vault did not answer')
    if (!key) throw new ApiError('BYOK_REQUIRED', { provider: provider.id, link_via: 'POST /v1/keys/link' })
    return key
  }
  // house and free lanes: the house key (Catalog.require already refused a house lane without one).
  return provider.houseKey ?? ''
}

function fingerprint(slug: string, rawBody: string): string {
  return createHash('sha256').update(slug).update('\n').update(rawBody).digest('base64url')
}

function failureReason(up: UpstreamResult): string {
  switch (up.kind) {
    case 'timeout':
      return 'timeout'
    case 'network':
      return 'network'
    case 'too_large':
      return 'too_large'
    default:
      return 'provider_error'
  }
}
