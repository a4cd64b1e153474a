/**
 * Account creation and the referral bonus, both single scripts in the account's shard.
 */
import { randomInt } from 'node:crypto'
import { randomId } from '../auth/tokens'
import { runCreateAccount, runReferralBonus } from '../lua/accounts'
import { SHARDS, shardOfAccount } from '../redis/keys'
import { hktDay } from '../clock'
import type { RedisContext } from '../redis/context'
import { DAY_KEY_TTL_S, REFERRAL_CREDITS, SIGNUP_CREDITS } from './constants'

export interface NewAccount {
  email: string
  origin: string | null
  ownerTokenHash: string
  /** Referrer's account id: the new account joins the referrer's shard. */
  referrerId: string | null
}

export function newAccountId(referrerId: string | null): string {
  const shard = referrerId ? shardOfAccount(referrerId) : randomInt(SHARDS)
  return `acc_${String(shard).padStart(2, '0')}_${randomId()}`
}

export async function createAccount(ctx: RedisContext, id: string, a: NewAccount): Promise<{ publicRef: string; mandateRef: string; balance: number }> {
  const publicRef = 'ref_' + randomId(9)
  const mandateRef = 'mr_' + randomId()
  const reply = await runCreateAccount(ctx, {
    now: ctx.clock.now(),
    accountId: id,
    ownerTokenHash: a.ownerTokenHash,
    email: a.email,
    publicRef,
    origin: a.origin,
    referrerId: a.referrerId,
    signupCredits: SIGNUP_CREDITS,
    balanceCap: ctx.cfg.DEFAULT_BALANCE_CAP,
    mandateRef,
  })
  if (reply.status !== 'ok') throw new Error(`create-account ${id}: ${reply.status}`)
  return { publicRef, mandateRef, balance: reply.balance }
}

/**
 * Credits both sides once, after the referred account's first successful call, within the
 * referrer's daily limit and each side's balance cap (referral-bonus.lua decides and records both).
 */
export async function applyReferralBonus(ctx: RedisContext, accountId: string, referrer: string, callId: string): Promise<number | null> {
  const now = ctx.clock.now()
  const reply = await runReferralBonus(ctx, {
    now,
    accountId,
    referrerId: referrer,
    day: hktDay(now),
    credits: REFERRAL_CREDITS,
    callId,
    perDay: ctx.cfg.REFERRAL_BONUS_PER_DAY,
    dayKeyTtlS: DAY_KEY_TTL_S,
    defaultBalanceCap: ctx.cfg.DEFAULT_BALANCE_CAP,
  })
  return reply.status === 'ok' ? reply.balance : null
}
