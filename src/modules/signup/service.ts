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
import { runRotateOwner } from '../../lua/rotate-owner'

export async function signup(ctx: RedisContext, body: { email: string; origin?: string; referred_by?: string }) {
  const { redis, keys } = ctx
  const email = body.email.trim().toLowerCase()
  let referrerId: string | null = null
  if (body.referred_by) {
    referrerId = await redis.get(keys.publicRef(body.referred_by))
    if (!referrerId) throw new ApiError('BAD_REQUEST', { field: 'referred_by', expected: "an existing account's public_ref" })
  }
  const id = newAccountId(referrerId)
  // The e-mail claim is the uniqueness guard: one SET NX, whichever instance wins. It comes before
  // the alarm's count, so that an attempt on a taken e-mail is never counted: counted first, such
  // attempts sent at once held the hour's places and could pause signups for everyone.
  if ((await redis.set(keys.email(email), id, 'NX')) === null) throw new ApiError('EMAIL_EXISTS')
  try {
    await admitSignup(ctx, id)
  } catch (e) {
    await redis.del(keys.email(email))
    throw e
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

/**
 * Replaces the owner token if `oldHash` is still the account's owner (rotate-owner.lua, a
 * compare-and-set): the old token fails on its very next request, on every instance. Answers null,
 * having written nothing that authenticates, when the owner changed since `oldHash` was admitted or
 * read (a recovery or another rotation came first).
 */
export async function swapOwnerToken(
  ctx: RedisContext,
  tokens: TokenResolver,
  accountId: string,
  oldHash: string,
  /** A recovery: when its link was issued. Throws LINK_INVALID, having changed nothing, if a recovery completed since. */
  linkIssuedAt?: number,
): Promise<{ token: string } | null> {
  const { redis, keys } = ctx
  const token = newToken('owner')
  const hash = hashToken(token)
  // The lookup key goes first, so the token works as soon as it is the owner; a refused swap takes
  // it back. Written after the swap, it could land after a recovery had replaced the new owner and
  // deleted its (not yet written) lookup key, and stay behind for a token that is no one's.
  await redis.set(keys.token(hash), `${accountId}|`)
  const swap = await runRotateOwner(ctx, { now: ctx.clock.now(), accountId, expectedHash: oldHash, newHash: hash, linkIssuedAt })
  if (swap.status !== 'ok') {
    await redis.del(keys.token(hash))
    if (swap.status === 'link_invalid') throw new ApiError('LINK_INVALID')
    return null
  }
  await redis.del(keys.token(oldHash))
  tokens.forget(oldHash)
  return { token }
}

/**
 * POST /v1/token/rotate with the owner bearer.
 * errors: UNAUTHORIZED (the bearer stopped being the owner token after it was admitted).
 */
export async function rotateOwnerToken(ctx: RedisContext, tokens: TokenResolver, accountId: string, oldHash: string) {
  const rotated = await swapOwnerToken(ctx, tokens, accountId, oldHash)
  if (!rotated) throw new ApiError('UNAUTHORIZED')
  return rotated
}
