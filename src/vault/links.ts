/**
 * One-time vault links. The code (256 random bits) is handed out once, inside the URL; Redis keeps
 * only its SHA-256, so a leaked Redis dump opens no link. Single use is decided by claim-link.lua.
 * errors: BAD_REQUEST (unknown provider), LINK_INVALID (malformed, unknown, expired), LINK_USED.
 */
import { createHash, randomBytes } from 'node:crypto'
import { randomId } from '../auth/tokens'
import { ApiError } from '../errors'
import type { RedisContext } from '../redis/context'
import { runClaimLink, runReleaseLink } from '../lua/links'

export const LINK_TTL_MS = 600_000
/** Long enough that a human coming back to the tab later is told "used", not "invalid". */
const USED_MARKER_MS = 86_400_000
const CODE_RE = /^[A-Za-z0-9_-]{43}$/
/**
 * The registry's message names both kinds of one-time link; `renew_via` tells a JSON client which
 * one this was, as recovery links do (their `renew_via` is POST /v1/token/rotate).
 */
const dead = (code: 'LINK_INVALID' | 'LINK_USED') => new ApiError(code, { renew_via: 'POST /v1/keys/link' })

export interface LinkTarget {
  accountId: string
  provider: string
  expiresAt: number
}

export async function createLink(ctx: RedisContext, accountId: string, provider: string) {
  const code = randomBytes(32).toString('base64url')
  const expiresAt = ctx.clock.now() + LINK_TTL_MS
  const key = ctx.keys.vaultLink(codeHash(code))
  await ctx.redis.multi().hset(key, 'acct', accountId, 'provider', provider, 'exp', expiresAt).pexpire(key, LINK_TTL_MS).exec()
  return { url: `${ctx.cfg.BASE_URL}/vault/${code}`, provider, expires_at: new Date(expiresAt).toISOString() }
}

/** What the link is for, without using it (the GET page). */
export async function inspectLink(ctx: RedisContext, code: string): Promise<LinkTarget> {
  if (!CODE_RE.test(code)) throw dead('LINK_INVALID')
  const [acct, provider, exp, used] = await ctx.redis.hmget(ctx.keys.vaultLink(codeHash(code)), 'acct', 'provider', 'exp', 'used')
  if (!acct || !provider || !exp) throw dead('LINK_INVALID')
  if (used) throw dead('LINK_USED')
  if (ctx.clock.now() >= Number(exp)) throw dead('LINK_INVALID')
  return { accountId: acct, provider, expiresAt: Number(exp) }
}

export interface Claim {
  accountId: string
  provider: string
  claimId: string
}

/** Uses the link up; exactly one concurrent caller gets the claim. */
export async function claimLink(ctx: RedisContext, code: string): Promise<Claim> {
  if (!CODE_RE.test(code)) throw dead('LINK_INVALID')
  const claimId = randomId(12)
  const reply = await runClaimLink(ctx, { linkKey: ctx.keys.vaultLink(codeHash(code)), now: ctx.clock.now(), claimId, usedMarkerMs: USED_MARKER_MS })
  if (reply.status === 'link_used') throw dead('LINK_USED')
  if (reply.status !== 'ok') throw dead('LINK_INVALID')
  return { accountId: reply.accountId, provider: reply.provider, claimId }
}

/** Gives the link back after the key could not be stored. */
export async function releaseLink(ctx: RedisContext, code: string, claimId: string): Promise<void> {
  await runReleaseLink(ctx, { linkKey: ctx.keys.vaultLink(codeHash(code)), claimId })
}

function codeHash(code: string): string {
  return createHash('sha256').update(code).digest('hex')
}
