/**
 * Money in: typed callers of the refill and credit scripts. Every rule lives in the scripts
 * (reserve-refill.lua before a charge, credit-topup.lua after it, release-refill.lua when it is refused,
 * decide-parked.lua for the founder); this file turns their named replies (src/lua/refills.ts)
 * into the outcomes the payment flows use.
 */
import { randomId } from '../auth/tokens'
import { hktDay, hktMonth } from '../clock'
import { ScriptStatus as S } from '../redis/codes'
import { SHARDS, shardOfAccount } from '../redis/keys'
import { runCreditTopup, runDecideParked, runReleaseRefill, runReserveRefill, type ParkedOp, type ReserveRefillReply } from '../lua/refills'
import type { RedisContext } from '../redis/context'
import { CHARGE_TTL_S, DAY_KEY_TTL_S } from './constants'

/** How long a refill holds the account's refill lock: above the gateway's longest call (3 × 20 s). */
export const REFILL_HOLD_MS = 120_000
/** After a declined auto-refill, no new auto attempt for this long (an explicit top-up may still try). */
export const AUTO_REFILL_BACKOFF_MS = 3_600_000
/**
 * Declined top-ups one card may take a HKT day: an agent retrying POST /v1/topup must not hammer a
 * declined card (each try is a charge attempt at the card network). A new card lifts it.
 */
export const TOPUP_DECLINES_PER_DAY = 3
/** A month's refill counter outlives its month. */
const REFILLS_TTL_S = 62 * 86400

export type RefillMode = 'auto' | 'topup'

export interface Reservation {
  attemptId: string
  credits: number
  customerId: string
  paymentMethodId: string
  month: string
  day: number
}

export type ReserveOutcome =
  | { kind: 'reserved'; r: Reservation }
  /** CEILING_REACHED: a refilled, b ceiling, c credits, d pending (charges whose outcome is not known yet). */
  | { kind: 'refused'; status: S; a: number; b: number; c: number; d: number }

export async function reserveRefill(ctx: RedisContext, acct: string, mode: RefillMode, credits: number | null, gateway: string): Promise<ReserveOutcome> {
  const now = ctx.clock.now()
  const month = hktMonth(now)
  const day = hktDay(now)
  const attemptId = `rf_${randomId()}`
  const reply = await runReserveRefill(ctx, {
    now,
    accountId: acct,
    mode,
    credits,
    attemptId,
    month,
    day,
    holdMs: REFILL_HOLD_MS,
    dayKeyTtlS: DAY_KEY_TTL_S,
    gateway,
    defaultBalanceCap: ctx.cfg.DEFAULT_BALANCE_CAP,
    refillsTtlS: REFILLS_TTL_S,
    topupDeclinesPerDay: TOPUP_DECLINES_PER_DAY,
  })
  if (reply.status === 'ok')
    return { kind: 'reserved', r: { attemptId, credits: reply.credits, customerId: reply.customerId, paymentMethodId: reply.paymentMethodId, month, day } }
  return { kind: 'refused', ...refusedValues(reply) }
}

/** The refusal in the a..d shape the refill results carry (mandate/refill.ts, the top-up's answer). */
function refusedValues(r: Exclude<ReserveRefillReply, { status: 'ok' }>): { status: S; a: number; b: number; c: number; d: number } {
  const of = (status: S, a = 0, b = 0, c = 0, d = 0) => ({ status, a, b, c, d })
  switch (r.status) {
    case 'no_mandate':
      return of(S.NO_MANDATE)
    case 'refill_in_flight':
      return of(S.REFILL_IN_FLIGHT)
    case 'refill_not_needed':
      return of(S.REFILL_NOT_NEEDED, r.balance, r.threshold)
    case 'refill_backoff':
      return of(S.REFILL_BACKOFF, r.retryAfterMs)
    case 'topup_today':
      return of(S.TOPUP_TODAY)
    case 'ceiling_reached':
      return of(S.CEILING_REACHED, r.refilled, r.ceiling, r.credits, r.pending)
    case 'balance_cap':
      return of(S.BALANCE_CAP, r.balance, r.balanceCap, r.credits)
    case 'not_found':
      return of(S.NOT_FOUND)
  }
}

export interface CreditRequest {
  accountId: string
  chargeId: string
  credits: number
  kind: 'refill' | 'topup' | 'pack'
  /** The reservation this charge settles (refill, topup); absent for a pack. */
  attemptId?: string
  /** HKT month of the reservation (ceiling window); packs do not count. */
  month?: string
  gateway: string
}

export type CreditOutcome =
  | { kind: 'credited'; balance: number; credits: number }
  | { kind: 'parked'; balance: number; balanceCap: number; parkedId: string }
  | { kind: 'duplicate'; balance: number; state: 'credited' | 'parked'; parkedId: string | null; balanceCap: number }
  | { kind: 'no_account' }

/** `pk_<shard>_<random>`: the id names its shard, so the founder's routes find the record directly. */
export function newParkedId(acct: string): string {
  return `pk_${String(shardOfAccount(acct)).padStart(2, '0')}_${randomId()}`
}

/** Null for an id no parked payment can have — a shard past the last one included — so callers answer NOT_FOUND. */
export function shardOfParked(id: string): number | null {
  const m = /^pk_(\d{2})_[A-Za-z0-9_-]{10,64}$/.exec(id)
  return m && Number(m[1]) < SHARDS ? Number(m[1]) : null
}

export async function creditCharge(ctx: RedisContext, c: CreditRequest): Promise<CreditOutcome> {
  const reply = await runCreditTopup(ctx, {
    now: ctx.clock.now(),
    accountId: c.accountId,
    chargeId: c.chargeId,
    credits: c.credits,
    kind: c.kind,
    attemptId: c.attemptId,
    month: c.month ?? hktMonth(ctx.clock.now()),
    parkedId: newParkedId(c.accountId),
    gateway: c.gateway,
    chargeTtlS: CHARGE_TTL_S,
    refillsTtlS: REFILLS_TTL_S,
  })
  switch (reply.status) {
    case 'ok':
      return { kind: 'credited', balance: reply.balance, credits: reply.credits }
    case 'parked':
      return { kind: 'parked', balance: reply.balance, balanceCap: reply.balanceCap, parkedId: reply.parkedId }
    case 'already_applied':
      return { kind: 'duplicate', balance: reply.balance, state: reply.state, parkedId: reply.parkedId, balanceCap: reply.balanceCap }
    case 'not_found':
      return { kind: 'no_account' }
  }
}

/**
 * The processor refused the charge (or, 'void', never received it): its pending amount no longer
 * counts against the ceiling; if it still holds the lock, free it (and the day's top-up) and maybe
 * disable the mandate. A refusal that arrives late (webhook) names the attempt and month only:
 * `day` is then today's. 'replaced': released, but the card charged was replaced (or forgotten)
 * meanwhile, so nothing was held against the mandate; 'already': settled before.
 */
export async function releaseRefill(
  ctx: RedisContext,
  acct: string,
  r: Pick<Reservation, 'attemptId' | 'month' | 'day'>,
  outcome: 'declined' | 'authentication_required' | 'void',
  code: string,
): Promise<'released' | 'replaced' | 'already'> {
  const reply = await runReleaseRefill(ctx, {
    now: ctx.clock.now(),
    accountId: acct,
    attemptId: r.attemptId,
    month: r.month,
    day: r.day,
    outcome,
    code: code.slice(0, 64),
    backoffMs: AUTO_REFILL_BACKOFF_MS,
  })
  return reply.status !== 'ok' ? 'already' : reply.replaced ? 'replaced' : 'released'
}

export type { ParkedOp }

export type DecideOutcome =
  | { kind: 'ok'; balance: number; credits: number; chargeId: string }
  | { kind: 'not_found' }
  | { kind: 'wrong_state'; state: string }

export async function decideParked(ctx: RedisContext, id: string, acct: string, op: ParkedOp): Promise<DecideOutcome> {
  const reply = await runDecideParked(ctx, { now: ctx.clock.now(), parkedId: id, accountId: acct, op })
  switch (reply.status) {
    case 'ok':
      return { kind: 'ok', balance: reply.balance, credits: reply.credits, chargeId: reply.chargeId }
    case 'wrong_state':
      return { kind: 'wrong_state', state: reply.state }
    case 'not_found':
      return { kind: 'not_found' }
  }
}
