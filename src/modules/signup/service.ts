/**
 * Signup and owner-token rotation.
 * errors: EMAIL_EXISTS, BAD_REQUEST (unknown referred_by), SIGNUPS_PAUSED.
 */
import { hashToken, newToken } from '../../auth/tokens'
import type { TokenResolver } from '../../auth/principal'
import { ApiError } from '../../errors'
import type { RedisContext } from '../../redis/context'
import { SIGNUP_CREDITS } from '../../ledger/constants'
import { createAccount, newAccountId } from '../../ledger/accounts'
import { admitSignup, releaseSignup } from '../../alarms/signups'

export async function signup(ctx: RedisContext, body: { email: string; origin?: string; referred_by?: string }) {
  const { redis, keys } = ctx
  const email = body.email.trim().toLowerCase()
  let referrerId: string | null = null
  if (body.referred_by) {
    referrerId = await redis.get(keys.publicRef(body.referred_by))
    if (!referrerId) throw new ApiError('BAD_REQUEST', { field: 'referred_by', expected: "an existing account's public_ref" })
  }
  const id = newAccountId(referrerId)
  await admitSignup(ctx, id)
  // The e-mail claim is the uniqueness guard: one SET NX, whichever instance wins.
  if ((await redis.set(keys.email(email), id, 'NX')) === null) {
    await releaseSignup(ctx, id)
    throw new ApiError('EMAIL_EXISTS')
  }
  const token = newToken('owner')
  const tokenHash = hashToken(token)
  let created: Awaited<ReturnType<typeof createAccount>>
  try {
    created = await createAccount(ctx, id, { email, origin: body.origin ?? null, ownerTokenHash: tokenHash, referrerId })
  } catch (e) {
    await Promise.all([redis.del(keys.email(email)), releaseSignup(ctx, id)])
    throw e
  }
  await Promise.all([
    redis.set(keys.token(tokenHash), `${id}|`),
    redis.set(keys.publicRef(created.publicRef), id),
    redis.set(keys.mandateRef(created.mandateRef), id),
  ])
  return { account_id: id, token, public_ref: created.publicRef, credits_granted: SIGNUP_CREDITS, balance: created.balance }
}

/** Replaces the owner token: the old one fails on its very next request, on every instance. */
export async function rotateOwnerToken(ctx: RedisContext, tokens: TokenResolver, accountId: string, oldHash: string) {
  const { redis, keys } = ctx
  const token = newToken('owner')
  const hash = hashToken(token)
  await redis.set(keys.token(hash), `${accountId}|`)
  await redis
    .multi()
    .hset(keys.account(accountId), 'owner', hash)
    .xadd(keys.outbox(keys.shardOf(accountId)), '*', 'kind', 'owner', 'id', `${accountId}:owner:${hash.slice(0, 16)}`, 'acct', accountId, 'owner', hash, 'at', String(ctx.clock.now()))
    .exec()
  await redis.del(keys.token(oldHash))
  tokens.forget(oldHash)
  return { token }
}
