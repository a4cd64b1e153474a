/**
 * Debit one paid request in a single round trip (debit.lua), the runaway-agent breaker included.
 * errors: UNAUTHORIZED, AGENT_*, RATE_LIMITED, POLICY_DENIED, DAILY_CAP_REACHED, REQUEST_CAP_REACHED,
 *         CONFLICT (idempotency), PAYMENT_REQUIRED (thrown by the caller via `insufficient`).
 */
import type { Principal } from '../auth/principal'
import { timeLedId } from '../auth/tokens'
import { runDebit, type DebitMetering, type RunState } from '../lua/debit'
import type { RedisContext } from '../redis/context'
import { DAY_KEY_TTL_S } from '../ledger/constants'
import { denial, runDenial } from '../lua/denials'
import { RUN_KEPT_S, type RunBudget } from './run-header'
import { windowsAt } from '../windows'

export interface DebitRequest {
  principal: Principal
  /** Capability slug or `proxy:<provider>`. */
  target: string
  price: number
  unpriced: boolean
  /** Idempotency-Key header and the request's fingerprint, when the client sent a key. */
  idempotency?: { key: string; fingerprint: string }
  /**
   * Hash of (target, body): the breaker's "identical requests" rule counts equal ones. Omitted when
   * the body is not at hand before the debit (the proxy streams it): only the credits rule applies.
   */
  fingerprint?: string
  /**
   * How long the request may run before a debit that was neither recorded nor refunded counts as
   * cut off (an API crash) and the sweeper refunds it. A proxied stream passes its lease here and
   * keeps renewing it (leases.ts). @default 30 minutes
   */
  abandonAfterMs?: number
  /** A metered request: `price` is ignored, the script reserves (docs/api.md §7). */
  metered?: DebitMetering
  /** The run budget the call names (X-Budget-Run, docs/api.md §13c). */
  run?: RunBudget
}

export const DEFAULT_ABANDON_AFTER_MS = 30 * 60_000

export type DebitOutcome =
  | {
      kind: 'debited'
      callId: string
      balance: number
      referrerId: string | null
      day: number
      at: number
      /** The credits debited (a metered request's reservation). */
      price: number
      /** Metered: the output ceiling reserved; `clamped` when the script chose it below max_output. */
      maxOut: number
      clamped: boolean
      /** The run the call named, after this debit. */
      run?: RunState
    }
  | { kind: 'replay'; response: string }
  | { kind: 'insufficient'; balance: number; price: number; mandateRef: string; affordableMaxTokens: number }

export async function debit(ctx: RedisContext, req: DebitRequest): Promise<DebitOutcome> {
  const { cfg } = ctx
  const { accountId: acct, agentId, tokenHash } = req.principal
  const now = ctx.clock.now()
  const w = windowsAt(now)
  const callId = 'call_' + timeLedId(now)
  const reply = await runDebit(ctx, {
    now,
    accountId: acct,
    agentId,
    chain: req.principal.chain,
    tokenHash,
    target: req.target,
    price: req.price,
    unpriced: req.unpriced,
    callId,
    day: w.day,
    rateWindow: w.rate,
    prevRateWindow: w.prevRate,
    rateLimit: cfg.RATE_LIMIT_PER_TOKEN,
    defaultDailyCap: cfg.DEFAULT_DAILY_CAP,
    unpricedRequestCap: cfg.UNPRICED_DAILY_REQUEST_CAP,
    idempotency: req.idempotency,
    fingerprint: req.fingerprint,
    dayKeyTtlS: DAY_KEY_TTL_S,
    breakerCreditsPerMinute: cfg.BREAKER_CREDITS_PER_MINUTE,
    breakerIdenticalPerMinute: cfg.BREAKER_IDENTICAL_PER_MINUTE,
    lowBalanceAlert: cfg.LOW_BALANCE_ALERT,
    abandonAt: now + (req.abandonAfterMs ?? DEFAULT_ABANDON_AFTER_MS),
    metered: req.metered,
    run: req.run ? { ...req.run, keptS: RUN_KEPT_S } : undefined,
  })
  // The refill itself runs in the background and never delays or fails this request.
  if ((reply.status === 'ok' || reply.status === 'insufficient_balance') && reply.refillDue) ctx.onRefillDue?.(acct)
  switch (reply.status) {
    case 'ok':
      return { kind: 'debited', callId, balance: reply.balance, referrerId: reply.referrerId, day: w.day, at: now, price: reply.price, maxOut: reply.maxOut, clamped: reply.clamped, run: reply.run }
    case 'replay':
      return { kind: 'replay', response: reply.response }
    case 'insufficient_balance':
      return { kind: 'insufficient', balance: reply.balance, price: reply.price, mandateRef: reply.mandateRef, affordableMaxTokens: reply.affordableMaxTokens }
    case 'run_budget':
      throw runDenial(reply)
    default:
      throw denial(reply, { agentId, resetsAt: w.resetsAt })
  }
}
