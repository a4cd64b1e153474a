/**
 * Money in: reserve-refill.lua (before a charge), credit-topup.lua (after it), release-refill.lua (the
 * processor refused it, or never received it), decide-parked.lua (the founder's decision). See their
 * Lua headers.
 */
import { previousHktMonth } from '../clock'
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import { num, statusOf, str, unexpected } from './reply'

export interface ReserveRefillArgs {
  now: number
  accountId: string
  mode: 'auto' | 'topup'
  /** null = the mandate's refill amount. */
  credits: number | null
  attemptId: string
  month: string
  day: number
  holdMs: number
  dayKeyTtlS: number
  gateway: string
  defaultBalanceCap: number
  refillsTtlS: number
  /** Declined top-ups a HKT day may make on one card before the day's top-ups are refused. */
  topupDeclinesPerDay: number
}

export type ReserveRefillReply =
  | { status: 'ok'; credits: number; customerId: string; paymentMethodId: string; balance: number }
  | { status: 'no_mandate' }
  | { status: 'refill_in_flight' }
  | { status: 'refill_not_needed'; balance: number; threshold: number }
  | { status: 'refill_backoff'; retryAfterMs: number }
  | { status: 'topup_today' }
  | { status: 'ceiling_reached'; refilled: number; ceiling: number; credits: number; pending: number }
  | { status: 'balance_cap'; balance: number; balanceCap: number; credits: number }
  | { status: 'not_found' }

export async function runReserveRefill(ctx: RedisContext, a: ReserveRefillArgs): Promise<ReserveRefillReply> {
  const { keys } = ctx
  const acct = a.accountId
  const reply = await ctx.scripts.reserveRefill(
    [keys.account(acct), keys.mandate(acct), keys.refills(acct, a.month), keys.topupDay(acct, a.day), keys.refills(acct, previousHktMonth(a.month))],
    [a.now, a.mode, a.credits ?? '', a.attemptId, a.month, a.day, a.holdMs, a.dayKeyTtlS, a.gateway, a.defaultBalanceCap, a.refillsTtlS, a.topupDeclinesPerDay],
  )
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', credits: num(reply, 1), customerId: str(reply, 2), paymentMethodId: str(reply, 3), balance: num(reply, 4) }
    case S.NO_MANDATE:
      return { status: 'no_mandate' }
    case S.REFILL_IN_FLIGHT:
      return { status: 'refill_in_flight' }
    case S.REFILL_NOT_NEEDED:
      return { status: 'refill_not_needed', balance: num(reply, 1), threshold: num(reply, 2) }
    case S.REFILL_BACKOFF:
      return { status: 'refill_backoff', retryAfterMs: num(reply, 1) }
    case S.TOPUP_TODAY:
      return { status: 'topup_today' }
    case S.CEILING_REACHED:
      return { status: 'ceiling_reached', refilled: num(reply, 1), ceiling: num(reply, 2), credits: num(reply, 3), pending: num(reply, 4) }
    case S.BALANCE_CAP:
      return { status: 'balance_cap', balance: num(reply, 1), balanceCap: num(reply, 2), credits: num(reply, 3) }
    case S.NOT_FOUND:
      return { status: 'not_found' }
    default:
      throw unexpected('reserve-refill.lua', reply)
  }
}

export interface CreditTopupArgs {
  now: number
  accountId: string
  chargeId: string
  credits: number
  kind: 'refill' | 'topup' | 'pack'
  /** The reservation this charge settles; absent for a pack. */
  attemptId?: string
  month: string
  /** The id to use should the charge have to be parked (pk_<shard>_<random>). */
  parkedId: string
  gateway: string
  chargeTtlS: number
  refillsTtlS: number
}

export type CreditTopupReply =
  | { status: 'ok'; balance: number; credits: number }
  | { status: 'parked'; balance: number; balanceCap: number; parkedId: string }
  | { status: 'already_applied'; balance: number; state: 'credited' | 'parked'; parkedId: string | null; balanceCap: number }
  | { status: 'not_found' }

export async function runCreditTopup(ctx: RedisContext, a: CreditTopupArgs): Promise<CreditTopupReply> {
  const { keys } = ctx
  const acct = a.accountId
  const shard = keys.shardOf(acct)
  const reply = await ctx.scripts.creditTopup(
    [
      keys.account(acct),
      keys.mandate(acct),
      keys.refills(acct, a.month),
      keys.charge(acct, a.chargeId),
      keys.parked(shard, a.parkedId),
      keys.parkedQueue(shard),
      keys.outbox(shard),
      keys.reversal(acct, a.chargeId),
    ],
    [a.now, acct, a.chargeId, a.credits, a.kind, a.attemptId ?? '', a.parkedId, a.gateway, a.chargeTtlS, a.refillsTtlS],
  )
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', balance: num(reply, 1), credits: num(reply, 2) }
    case S.PARKED:
      return { status: 'parked', balance: num(reply, 1), balanceCap: num(reply, 2), parkedId: str(reply, 3) }
    case S.ALREADY_APPLIED:
      return { status: 'already_applied', balance: num(reply, 1), state: str(reply, 2) as 'credited' | 'parked', parkedId: str(reply, 3) || null, balanceCap: num(reply, 4) }
    case S.NOT_FOUND:
      return { status: 'not_found' }
    default:
      throw unexpected('credit-topup.lua', reply)
  }
}

export interface ReleaseRefillArgs {
  now: number
  accountId: string
  attemptId: string
  month: string
  day: number
  /** 'void': the processor never received the charge — released without a failure or back-off. */
  outcome: 'declined' | 'authentication_required' | 'void'
  code: string
  backoffMs: number
}

export type ReleaseRefillReply =
  /**
   * mode '' when only the pending amount was released (the lock was no longer this attempt's);
   * replaced: the card charged is no longer the mandate's, so nothing was held against the mandate.
   */
  { status: 'ok'; mode: string; replaced: boolean } | { status: 'already_applied' }

export async function runReleaseRefill(ctx: RedisContext, a: ReleaseRefillArgs): Promise<ReleaseRefillReply> {
  const { keys } = ctx
  const acct = a.accountId
  const reply = await ctx.scripts.releaseRefill(
    [keys.mandate(acct), keys.account(acct), keys.topupDay(acct, a.day), keys.outbox(keys.shardOf(acct)), keys.refills(acct, a.month)],
    [a.now, acct, a.attemptId, a.outcome, a.code, a.backoffMs],
  )
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', mode: str(reply, 1), replaced: str(reply, 2) === 'replaced' }
    case S.ALREADY_APPLIED:
      return { status: 'already_applied' }
    default:
      throw unexpected('release-refill.lua', reply)
  }
}

export type ParkedOp = 'approve' | 'claim' | 'reject' | 'unclaim' | 'unknown'

export type DecideParkedReply =
  | { status: 'ok'; balance: number; credits: number; chargeId: string }
  | { status: 'not_found' }
  | { status: 'wrong_state'; state: string }

export async function runDecideParked(ctx: RedisContext, a: { now: number; parkedId: string; accountId: string; op: ParkedOp }): Promise<DecideParkedReply> {
  const { keys } = ctx
  const shard = keys.shardOf(a.accountId)
  const parked = keys.parked(shard, a.parkedId)
  // The charge names the reversal record an approval deducts: read here, checked by the script.
  const chargeId = (await ctx.redis.hget(parked, 'charge')) ?? ''
  const reply = await ctx.scripts.decideParked(
    [parked, keys.parkedQueue(shard), keys.account(a.accountId), keys.outbox(shard), keys.reversal(a.accountId, chargeId)],
    [a.now, a.parkedId, a.op, chargeId],
  )
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', balance: num(reply, 1), credits: num(reply, 2), chargeId: str(reply, 3) }
    case S.WRONG_STATE:
      return { status: 'wrong_state', state: str(reply, 1) }
    case S.NOT_FOUND:
      return { status: 'not_found' }
    default:
      throw unexpected('decide-parked.lua', reply)
  }
}
