/**
 * The scripts that make or restore an account hash: create-account.lua, referral-bonus.lua,
 * restore-account.lua (see their Lua headers).
 */
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import { num, statusOf, unexpected } from './reply'

export interface CreateAccountArgs {
  now: number
  accountId: string
  ownerTokenHash: string
  email: string
  publicRef: string
  origin: string | null
  referrerId: string | null
  signupCredits: number
  balanceCap: number
  mandateRef: string
}

export type CreateAccountReply = { status: 'ok'; balance: number } | { status: 'already_applied' } | { status: 'referrer_not_found' }

export async function runCreateAccount(ctx: RedisContext, a: CreateAccountArgs): Promise<CreateAccountReply> {
  const { keys } = ctx
  const id = a.accountId
  const reply = await ctx.scripts.createAccount(
    // Not referred: KEYS[2] must still be a key of the slot, one that is never written.
    [keys.account(id), a.referrerId ? keys.account(a.referrerId) : keys.agent(id, null), keys.outbox(keys.shardOf(id))],
    [a.now, id, a.ownerTokenHash, a.email, a.publicRef, a.origin ?? '', a.referrerId ?? '', a.signupCredits, a.balanceCap, a.mandateRef],
  )
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', balance: num(reply, 1) }
    case S.ALREADY_APPLIED:
      return { status: 'already_applied' }
    case S.NOT_FOUND:
      return { status: 'referrer_not_found' }
    default:
      throw unexpected('create-account.lua', reply)
  }
}

export interface ReferralBonusArgs {
  now: number
  accountId: string
  referrerId: string
  /** The HKT day of `now`: the referrer's daily bonus count is keyed by it. */
  day: number
  credits: number
  callId: string
  perDay: number
  dayKeyTtlS: number
  defaultBalanceCap: number
}

export type ReferralBonusReply = { status: 'ok'; balance: number } | { status: 'already_applied' }

export async function runReferralBonus(ctx: RedisContext, a: ReferralBonusArgs): Promise<ReferralBonusReply> {
  const { keys } = ctx
  const reply = await ctx.scripts.referralBonus(
    [keys.account(a.accountId), keys.account(a.referrerId), keys.referralBonusesToday(a.referrerId, a.day), keys.outbox(keys.shardOf(a.accountId))],
    [a.now, a.accountId, a.credits, a.callId, a.perDay, a.dayKeyTtlS, a.defaultBalanceCap],
  )
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', balance: num(reply, 1) }
    case S.ALREADY_APPLIED:
      return { status: 'already_applied' }
    default:
      throw unexpected('referral-bonus.lua', reply)
  }
}

export interface RestoreAccountArgs {
  accountId: string
  day: number
  /** Replace an existing account hash (the operator's --force), else restore only a missing one. */
  force: boolean
  balance: number
  spentToday: number
  dayKeyTtlS: number
  /** The account hash's other fields. */
  fields: Record<string, string>
}

export type RestoreAccountReply = { status: 'ok'; balance: number } | { status: 'already_applied'; balance: number }

export async function runRestoreAccount(ctx: RedisContext, a: RestoreAccountArgs): Promise<RestoreAccountReply> {
  const { keys } = ctx
  const reply = await ctx.scripts.restoreAccount(
    [keys.account(a.accountId), keys.spentToday(a.accountId, a.day)],
    [a.force ? '1' : '0', a.balance, a.spentToday, a.dayKeyTtlS, ...Object.entries(a.fields).flat()],
  )
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', balance: num(reply, 1) }
    case S.ALREADY_APPLIED:
      return { status: 'already_applied', balance: num(reply, 1) }
    default:
      throw unexpected('restore-account.lua', reply)
  }
}
