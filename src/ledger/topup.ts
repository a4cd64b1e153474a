/**
 * Money in: typed callers of the refill and credit scripts. Every rule lives in the scripts
 * (reserve-refill-4 before a charge, credit-topup-7 after it, release-refill-5 when it is refused,
 * decide-parked-4 for the founder); this file only builds keys and reads the tuples.
 */
import { randomId } from '../auth/tokens'
import { hktDay, hktMonth } from '../clock'
import { ScriptStatus as S } from '../redis/codes'
import { SHARDS, shardOfAccount } from '../redis/keys'
import type { RedisContext } from '../redis/context'
import { DAY_KEY_TTL_S } from './constants'

/** How long a refill holds the account's refill lock: above the gateway's longest call (3 × 20 s). */
export const REFILL_HOLD_MS = 120_000
/** After a declined auto-refill, no new auto attempt for this long (an explicit top-up may still try). */
export const AUTO_REFILL_BACKOFF_MS = 3_600_000
/** Charge records dedupe webhook replays; Stripe retries a delivery for up to 3 days. */
const CHARGE_TTL_S = 90 * 86400
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
  const { keys } = ctx
  const now = ctx.clock.now()
  const month = hktMonth(now)
  const day = hktDay(now)
  const attemptId = `rf_${randomId()}`
  const reply = await ctx.scripts.reserveRefill(
    [keys.account(acct), keys.mandate(acct), keys.refills(acct, month), keys.topupDay(acct, day)],
    [now, mode, credits ?? '', attemptId, month, day, REFILL_HOLD_MS, DAY_KEY_TTL_S, gateway, ctx.cfg.DEFAULT_BALANCE_CAP, REFILLS_TTL_S],
  )
  const status = Number(reply[0]) as S
  if (status !== S.OK)
    return { kind: 'refused', status, a: Number(reply[1] ?? 0), b: Number(reply[2] ?? 0), c: Number(reply[3] ?? 0), d: Number(reply[4] ?? 0) }
  return {
    kind: 'reserved',
    r: { attemptId, credits: Number(reply[1]), customerId: String(reply[2]), paymentMethodId: String(reply[3]), month, day },
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
  | { kind: 'duplicate'; balance: number; state: 'credited' | 'parked'; parkedId: string | null }
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
  const { keys } = ctx
  const shard = keys.shardOf(c.accountId)
  const parkedId = newParkedId(c.accountId)
  const month = c.month ?? hktMonth(ctx.clock.now())
  const reply = await ctx.scripts.creditTopup(
    [
      keys.account(c.accountId),
      keys.mandate(c.accountId),
      keys.refills(c.accountId, month),
      keys.charge(c.accountId, c.chargeId),
      keys.parked(shard, parkedId),
      keys.parkedQueue(shard),
      keys.outbox(shard),
    ],
    [ctx.clock.now(), c.accountId, c.chargeId, c.credits, c.kind, c.attemptId ?? '', parkedId, c.gateway, CHARGE_TTL_S, REFILLS_TTL_S],
  )
  switch (Number(reply[0])) {
    case S.OK:
      return { kind: 'credited', balance: Number(reply[1]), credits: Number(reply[2]) }
    case S.PARKED:
      return { kind: 'parked', balance: Number(reply[1]), balanceCap: Number(reply[2]), parkedId: String(reply[3]) }
    case S.ALREADY_APPLIED:
      return { kind: 'duplicate', balance: Number(reply[1]), state: reply[2] as 'credited' | 'parked', parkedId: (reply[3] as string) || null }
    case S.NOT_FOUND:
      return { kind: 'no_account' }
    default:
      throw new Error(`credit-topup: status ${reply[0]}`)
  }
}

/**
 * The processor refused the charge: its pending amount no longer counts against the ceiling; if it
 * still holds the lock, free it (and the day's top-up) and maybe disable the mandate. A refusal
 * that arrives late (webhook) names the attempt and month only: `day` is then today's.
 */
export async function releaseRefill(
  ctx: RedisContext,
  acct: string,
  r: Pick<Reservation, 'attemptId' | 'month' | 'day'>,
  outcome: 'declined' | 'authentication_required',
  code: string,
): Promise<boolean> {
  const { keys } = ctx
  const reply = await ctx.scripts.releaseRefill(
    [keys.mandate(acct), keys.account(acct), keys.topupDay(acct, r.day), keys.outbox(keys.shardOf(acct)), keys.refills(acct, r.month)],
    [ctx.clock.now(), acct, r.attemptId, outcome, code.slice(0, 64), AUTO_REFILL_BACKOFF_MS],
  )
  return Number(reply[0]) === S.OK
}

export type ParkedOp = 'approve' | 'claim' | 'reject' | 'unclaim'

export type DecideOutcome =
  | { kind: 'ok'; balance: number; credits: number; chargeId: string }
  | { kind: 'not_found' }
  | { kind: 'wrong_state'; state: string }

export async function decideParked(ctx: RedisContext, id: string, acct: string, op: ParkedOp): Promise<DecideOutcome> {
  const { keys } = ctx
  const shard = keys.shardOf(acct)
  const reply = await ctx.scripts.decideParked(
    [keys.parked(shard, id), keys.parkedQueue(shard), keys.account(acct), keys.outbox(shard)],
    [ctx.clock.now(), id, op],
  )
  switch (Number(reply[0])) {
    case S.OK:
      return { kind: 'ok', balance: Number(reply[1]), credits: Number(reply[2]), chargeId: String(reply[3]) }
    case S.WRONG_STATE:
      return { kind: 'wrong_state', state: String(reply[1]) }
    default:
      return { kind: 'not_found' }
  }
}
