/**
 * Debit one paid request in a single round trip (debit-13), the runaway-agent breaker included.
 * errors: UNAUTHORIZED, AGENT_*, RATE_LIMITED, POLICY_DENIED, DAILY_CAP_REACHED, REQUEST_CAP_REACHED,
 *         CONFLICT (idempotency), PAYMENT_REQUIRED (thrown by the caller via `insufficient`).
 */
import type { Principal } from '../auth/principal'
import { randomId } from '../auth/tokens'
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import { DAY_KEY_TTL_S } from './constants'
import { denial } from './denials'
import { windowsAt } from './windows'

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
}

export const DEFAULT_ABANDON_AFTER_MS = 30 * 60_000

export type DebitOutcome =
  | { kind: 'debited'; callId: string; balance: number; referrerId: string | null; day: number; at: number }
  | { kind: 'replay'; response: string }
  | { kind: 'insufficient'; balance: number; price: number; mandateRef: string }

export async function debit(ctx: RedisContext, req: DebitRequest): Promise<DebitOutcome> {
  const { keys, cfg } = ctx
  const { accountId: acct, agentId, tokenHash } = req.principal
  const now = ctx.clock.now()
  const w = windowsAt(now)
  const callId = 'call_' + randomId()
  const reply = await ctx.scripts.debit(
    [
      keys.account(acct),
      keys.agent(acct, agentId),
      keys.spentToday(acct, w.day),
      keys.agentSpentToday(acct, agentId, w.day),
      keys.unpricedRequestsToday(acct, w.day),
      keys.rateWindow(acct, agentId, w.rate),
      keys.rateWindow(acct, agentId, w.prevRate),
      keys.call(acct, callId),
      keys.idempotency(acct, agentId, req.idempotency?.key ?? null),
      keys.outbox(keys.shardOf(acct)),
      keys.breakerWindow(acct, agentId, w.rate),
      keys.breakerWindow(acct, agentId, w.prevRate),
      keys.inflight(keys.shardOf(acct)),
    ],
    [
      now,
      tokenHash,
      agentId ?? '',
      req.target,
      req.price,
      req.unpriced ? '1' : '0',
      callId,
      cfg.RATE_LIMIT_PER_TOKEN,
      cfg.DEFAULT_DAILY_CAP,
      cfg.UNPRICED_DAILY_REQUEST_CAP,
      req.idempotency?.fingerprint ?? '',
      DAY_KEY_TTL_S,
      acct,
      req.fingerprint ?? '',
      cfg.BREAKER_CREDITS_PER_MINUTE,
      cfg.BREAKER_IDENTICAL_PER_MINUTE,
      cfg.LOW_BALANCE_ALERT,
      now + (req.abandonAfterMs ?? DEFAULT_ABANDON_AFTER_MS),
      req.idempotency?.key ?? '',
    ],
  )
  const status = reply[0] as number
  // debit-13's refill flag (5th element on OK, 4th on INSUFFICIENT_BALANCE): the refill itself runs
  // in the background and never delays or fails this request.
  const refillFlag = status === S.OK ? reply[4] : status === S.INSUFFICIENT_BALANCE ? reply[3] : 0
  if (Number(refillFlag) === 1) ctx.onRefillDue?.(acct)
  if (status === S.OK)
    return { kind: 'debited', callId, balance: Number(reply[1]), referrerId: (reply[2] as string) || null, day: w.day, at: now }
  if (status === S.REPLAY) return { kind: 'replay', response: String(reply[2]) }
  if (status === S.INSUFFICIENT_BALANCE)
    return { kind: 'insufficient', balance: Number(reply[1]), price: Number(reply[2]), mandateRef: String(reply[4] ?? '') }
  throw denial(reply, { agentId, resetsAt: w.resetsAt })
}
