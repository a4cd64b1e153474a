/** reverse-charge.lua: a credited card charge refunded or disputed at the processor. See its Lua header. */
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import { num, statusOf, unexpected } from './reply'

export type ReversalCause = 'refund' | 'dispute'

export interface ReverseChargeArgs {
  now: number
  accountId: string
  chargeId: string
  cause: ReversalCause
  /** Cumulative refunded cents (refund), or the disputed cents (dispute). */
  reversedCents: number
  /** The charge's amount, cents. */
  chargeCents: number
  /** Credits of the charge's top-up entry in Postgres; null when it has none. */
  ledgerCredits: number | null
  /** The parked payment the charge record names (read first; the script checks it); null for none. */
  parkedId: string | null
  /** The credits the charge pays for (its metadata): a reversal before the credit is reckoned in them; null when unknown. */
  chargeCredits: number | null
}

export type ReverseChargeReply =
  | { status: 'ok'; balance: number; taken: number; unrecovered: number; mandateDisabled: boolean }
  | { status: 'already_applied'; balance: number; mandateDisabled: boolean }
  /** Not credited yet: recorded for the credit to deduct. `parkedReversed`: it was parked, is reversed in full, and can no longer be approved (state `reversed`). */
  | { status: 'recorded'; mandateDisabled: boolean; parkedReversed: boolean }
  | { status: 'not_credited'; mandateDisabled: boolean }
  | { status: 'credits_unknown' }
  | { status: 'not_found' }

export async function runReverseCharge(ctx: RedisContext, a: ReverseChargeArgs): Promise<ReverseChargeReply> {
  const { keys } = ctx
  const acct = a.accountId
  const shard = keys.shardOf(acct)
  const reply = await ctx.scripts.reverseCharge(
    [
      keys.account(acct),
      keys.mandate(acct),
      keys.charge(acct, a.chargeId),
      keys.reversal(acct, a.chargeId),
      keys.outbox(shard),
      a.parkedId ? keys.parked(shard, a.parkedId) : keys.charge(acct, a.chargeId),
      keys.parkedQueue(shard),
    ],
    [a.now, acct, a.chargeId, a.cause, a.reversedCents, a.chargeCents, a.ledgerCredits ?? '', a.parkedId ?? '', a.chargeCredits ?? ''],
  )
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', balance: num(reply, 1), taken: num(reply, 2), unrecovered: num(reply, 3), mandateDisabled: num(reply, 4) === 1 }
    case S.ALREADY_APPLIED:
      return { status: 'already_applied', balance: num(reply, 1), mandateDisabled: num(reply, 2) === 1 }
    case S.RECORDED:
      return { status: 'recorded', mandateDisabled: num(reply, 1) === 1, parkedReversed: num(reply, 2) === 1 }
    case S.NOT_CREDITED:
      return { status: 'not_credited', mandateDisabled: num(reply, 1) === 1 }
    case S.CREDITS_UNKNOWN:
      return { status: 'credits_unknown' }
    case S.NOT_FOUND:
      return { status: 'not_found' }
    default:
      throw unexpected('reverse-charge.lua', reply)
  }
}
