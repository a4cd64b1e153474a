/**
 * The mandate as Redis holds it (one hash in the account's slot, written only by set-mandate.lua,
 * reserve/credit/release scripts), read into a typed record.
 */
import { hktMonth } from '../clock'
import type { Config } from '../config'
import { runSetMandate, type MandateOp, type SetMandateReply } from '../lua/mandate'
import type { RedisContext } from '../redis/context'
import type { Limits, SavedCard } from '../payments/gateway'

export interface MandateRecord extends Limits {
  enabled: boolean
  card: SavedCard | null
  gateway: string | null
  customerId: string | null
  disabledReason: string | null
  lastFailure: { code: string; at: string } | null
  refilledThisPeriod: number
  /** Charged this HKT month with the outcome not known yet: counts against the ceiling too. */
  pendingThisPeriod: number
}

/** Limits of a mandate nobody has set yet: $1 threshold, $5 refills, $20 a month. */
export function defaultLimits(cfg: Pick<Config, 'CREDITS_PER_USD'>): Limits {
  return { threshold: cfg.CREDITS_PER_USD, refill: 5 * cfg.CREDITS_PER_USD, ceiling: 20 * cfg.CREDITS_PER_USD }
}

const FIELDS = ['enabled', 'threshold', 'refill', 'ceiling', 'brand', 'last4', 'customer', 'pm', 'gateway', 'disabled_reason', 'last_failure', 'last_failure_at'] as const

export async function readMandate(ctx: RedisContext, acct: string): Promise<MandateRecord> {
  const { redis, keys } = ctx
  const [m, [refilled, pending]] = await Promise.all([
    redis.hmget(keys.mandate(acct), ...FIELDS),
    redis.hmget(keys.refills(acct, hktMonth(ctx.clock.now())), 'refilled', 'pending'),
  ])
  const [enabled, threshold, refill, ceiling, brand, last4, customer, pm, gateway, disabledReason, lastFailure, lastFailureAt] = m
  const d = defaultLimits(ctx.cfg)
  return {
    enabled: enabled === '1',
    threshold: threshold ? Number(threshold) : d.threshold,
    refill: refill ? Number(refill) : d.refill,
    ceiling: ceiling ? Number(ceiling) : d.ceiling,
    card: pm && brand && last4 && customer ? { brand, last4, customerId: customer, paymentMethodId: pm } : null,
    gateway: gateway ?? null,
    customerId: customer ?? null,
    disabledReason: disabledReason ?? null,
    lastFailure: lastFailure ? { code: lastFailure, at: new Date(Number(lastFailureAt)).toISOString() } : null,
    refilledThisPeriod: Number(refilled ?? 0),
    pendingThisPeriod: Number(pending ?? 0),
  }
}

export type { MandateOp }

/** Runs set-mandate.lua for the account, now. */
export function setMandate(ctx: RedisContext, acct: string, o: MandateOp): Promise<SetMandateReply> {
  return runSetMandate(ctx, acct, ctx.clock.now(), o)
}

/** A reservation whose charge's outcome is not known yet (`a:<attempt>` of a month's refills). */
export interface UnsettledAttempt {
  attemptId: string
  credits: number
  month: string
}

export interface Unsettled {
  attempts: UnsettledAttempt[]
  /** The refill lock, if any attempt holds it (it may have lapsed: `until` ≤ now). */
  lock: { attemptId: string; until: number; day: number } | null
  customerId: string | null
  gateway: string | null
}

/** The unsettled reservations of the given HKT months, and what a look-up of them needs. */
export async function readUnsettled(ctx: RedisContext, acct: string, months: string[]): Promise<Unsettled> {
  const { redis, keys } = ctx
  const [m, ...perMonth] = await Promise.all([
    redis.hmget(keys.mandate(acct), 'pending', 'pending_until', 'pending_day', 'customer', 'gateway'),
    ...months.map((month) => redis.hgetall(keys.refills(acct, month))),
  ])
  const [pending, until, day, customer, gateway] = m as (string | null)[]
  const attempts: UnsettledAttempt[] = []
  months.forEach((month, i) => {
    for (const [field, v] of Object.entries(perMonth[i] as Record<string, string>))
      if (field.startsWith('a:')) attempts.push({ attemptId: field.slice(2), credits: Number(v), month })
  })
  return {
    attempts,
    lock: pending ? { attemptId: pending, until: Number(until ?? 0), day: Number(day ?? 0) } : null,
    customerId: customer ?? null,
    gateway: gateway ?? null,
  }
}
