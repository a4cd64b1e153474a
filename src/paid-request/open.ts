/**
 * Opening a paid request: the debit (debit.lua: token, rate limit, agent state, Idempotency-Key,
 * allowlists, caps, balance, breaker) and, for a request of unknown length, its in-flight lease.
 * errors: every denial of debit.lua (thrown), PAYMENT_REQUIRED (built with the account's links).
 */
import type { Config } from '../config'
import type { Log } from '../log'
import { paymentRequired } from '../payments/payment-required'
import type { RedisContext } from '../redis/context'
import { debit, type DebitRequest } from './debit'
import type { InFlightLeases } from './leases'
import type { CallLane } from './calls'
import { DebitedCall } from './debited-call'

export interface PaidCallDeps {
  ctx: RedisContext
  cfg: Config
  log: Log
  leases: InFlightLeases
}

/** What a debit takes (debit.ts), plus how an open-ended request keeps its deadline. */
export interface PaidCallRequest extends DebitRequest {
  /** A request with no natural end (a stream): renew its deadline while it runs (leases.ts); then the lease, not `abandonAfterMs`, is its deadline. */
  lease?: boolean
  /** Whose key the request goes out with (the house's or the owner's), filed with the call. */
  lane?: CallLane
}

export type OpenedCall = { kind: 'replay'; response: string } | { kind: 'debited'; call: DebitedCall }

export async function openPaidCall(deps: PaidCallDeps, req: PaidCallRequest): Promise<OpenedCall> {
  const { principal } = req
  const d = await debit(deps.ctx, {
    principal,
    target: req.target,
    price: req.price,
    unpriced: req.unpriced,
    idempotency: req.idempotency,
    fingerprint: req.fingerprint,
    abandonAfterMs: req.lease ? deps.leases.leaseMs : req.abandonAfterMs,
    metered: req.metered,
    run: req.run,
  })
  if (d.kind === 'replay') return { kind: 'replay', response: d.response }
  if (d.kind === 'insufficient')
    throw await paymentRequired(deps, principal.accountId, d.balance, d.price, {
      mandateRef: d.mandateRef,
      agentId: principal.agentId,
      affordableMaxTokens: req.metered ? d.affordableMaxTokens : undefined,
    })
  const releaseLease = req.lease ? deps.leases.hold(principal.accountId, d.callId) : () => {}
  const call = new DebitedCall(deps, {
    principal,
    target: req.target,
    price: d.price,
    callId: d.callId,
    balance: d.balance,
    referrerId: d.referrerId,
    day: d.day,
    at: d.at,
    idempotencyKey: req.idempotency?.key,
    releaseLease,
    run: d.run,
    runId: req.run?.id,
    metered: req.metered ? { model: req.metered.model, inputBound: req.metered.inputBound, maxOut: d.maxOut, clamped: d.clamped } : undefined,
    lane: req.lane,
  })
  return { kind: 'debited', call }
}
