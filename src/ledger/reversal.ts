/**
 * Money going back out: a card charge we credited was refunded at the processor (in its dashboard,
 * or our own refund of a rejected parked payment) or disputed by the card holder — also before the
 * charge was credited (recorded, and the credit deducts it). reverse-charge.lua
 * decides everything — whether the charge was credited, how many credits the reversed amount is,
 * what the balance still has to give — and this file only gathers what the script cannot read in
 * Redis: the credits of the charge's top-up entry in Postgres, for a charge whose Redis record
 * (90 days) is gone.
 * errors: a Postgres failure propagates (the webhook answers 500 and the processor retries), as
 *         does `credits_unknown` (ReversalPendingError).
 */
import { and, eq, sql } from 'drizzle-orm'
import type { Database } from '../db/client'
import { ledgerEntries } from '../db/schema'
import { runReverseCharge, type ReversalCause } from '../lua/reversals'
import type { RedisContext } from '../redis/context'

export type { ReversalCause }

export interface ReversalRequest {
  accountId: string
  /** The charge id credit-topup.lua credited (Stripe's PaymentIntent id). */
  chargeId: string
  cause: ReversalCause
  /** Cumulative refunded cents (refund) or the disputed cents (dispute). */
  reversedCents: number
  chargeCents: number
  /** The credits the charge pays for (the processor's metadata); null when unknown. */
  chargeCredits: number | null
}

export type ReversalOutcome =
  | { kind: 'reversed'; balance: number; taken: number; unrecovered: number; mandateDisabled: boolean }
  /** Nothing more owed for this amount: a replay, or an amount already reversed. */
  | { kind: 'duplicate'; balance: number; mandateDisabled: boolean }
  /**
   * The charge is not credited yet (its credit event is still to come, or it awaits the founder):
   * recorded, and its credit deducts it. `parkedReversed`: it was awaiting the founder, is reversed
   * in full, and is now `reversed` (never to be approved).
   */
  | { kind: 'recorded'; mandateDisabled: boolean; parkedReversed: boolean }
  /** The charge was never credited here and never will be (a rejected parked payment, no credits known). */
  | { kind: 'not_credited'; mandateDisabled: boolean }
  | { kind: 'no_account' }

/** The charge was credited but its credits are not known yet: the caller asks again later. */
export class ReversalPendingError extends Error {}

/**
 * Credits the charge's top-up entry in the durable ledger is worth — what it credited plus what a
 * reversal before it left uncredited; null when it has none.
 */
async function ledgerCredits(db: Database, accountId: string, chargeId: string): Promise<number | null> {
  const rows = await db
    .select({ amount: sql<number>`(${ledgerEntries.amount} + coalesce(${ledgerEntries.uncredited}, 0))::bigint` })
    .from(ledgerEntries)
    .where(and(eq(ledgerEntries.accountId, accountId), eq(ledgerEntries.kind, 'topup'), eq(ledgerEntries.refId, chargeId)))
    .limit(1)
  return rows[0] ? Number(rows[0].amount) : null
}

export async function reverseCharge(ctx: RedisContext, db: Database, r: ReversalRequest): Promise<ReversalOutcome> {
  const reply = await runReverseCharge(ctx, {
    now: ctx.clock.now(),
    accountId: r.accountId,
    chargeId: r.chargeId,
    cause: r.cause,
    reversedCents: r.reversedCents,
    chargeCents: r.chargeCents,
    ledgerCredits: await ledgerCredits(db, r.accountId, r.chargeId),
    // Which parked payment the charge record names: read here, checked by the script.
    parkedId: await ctx.redis.hget(ctx.keys.charge(r.accountId, r.chargeId), 'parked'),
    chargeCredits: r.chargeCredits,
  })
  switch (reply.status) {
    case 'ok':
      return { kind: 'reversed', balance: reply.balance, taken: reply.taken, unrecovered: reply.unrecovered, mandateDisabled: reply.mandateDisabled }
    case 'already_applied':
      return { kind: 'duplicate', balance: reply.balance, mandateDisabled: reply.mandateDisabled }
    case 'recorded':
      return { kind: 'recorded', mandateDisabled: reply.mandateDisabled, parkedReversed: reply.parkedReversed }
    case 'not_credited':
      return { kind: 'not_credited', mandateDisabled: reply.mandateDisabled }
    case 'not_found':
      return { kind: 'no_account' }
    case 'credits_unknown':
      throw new ReversalPendingError(`${r.chargeId}: credited, but its top-up entry is not in Postgres yet`)
  }
}
