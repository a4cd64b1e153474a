/**
 * Account creation and the referral bonus, both single scripts in the account's shard.
 */
import { randomInt } from 'node:crypto'
import { randomId } from '../auth/tokens'
import { ScriptStatus as S } from '../redis/codes'
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
  const { keys } = ctx
  const publicRef = 'ref_' + randomId(9)
  const mandateRef = 'mr_' + randomId()
  const reply = await ctx.scripts.createAccount(
    [keys.account(id), a.referrerId ? keys.account(a.referrerId) : keys.agent(id, null), keys.outbox(keys.shardOf(id))],
    [ctx.clock.now(), id, a.ownerTokenHash, a.email, publicRef, a.origin ?? '', a.referrerId ?? '', SIGNUP_CREDITS, ctx.cfg.DEFAULT_BALANCE_CAP, mandateRef],
  )
  if (reply[0] !== S.OK) throw new Error(`create-account ${id}: status ${reply[0]}`)
  return { publicRef, mandateRef, balance: Number(reply[1]) }
}

/**
 * Credits both sides once, after the referred account's first successful call, within the
 * referrer's daily limit and each side's balance cap (referral-bonus-4 decides and records both).
 */
export async function applyReferralBonus(ctx: RedisContext, accountId: string, referrer: string, callId: string): Promise<number | null> {
  const { keys } = ctx
  const reply = await ctx.scripts.referralBonus(
    [keys.account(accountId), keys.account(referrer), keys.referralBonusesToday(referrer, hktDay(ctx.clock.now())), keys.outbox(keys.shardOf(accountId))],
    [ctx.clock.now(), accountId, REFERRAL_CREDITS, callId, ctx.cfg.REFERRAL_BONUS_PER_DAY, DAY_KEY_TTL_S, ctx.cfg.DEFAULT_BALANCE_CAP],
  )
  return reply[0] === S.OK ? Number(reply[1]) : null
}
