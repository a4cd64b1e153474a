/**
 * The request counters that move no money: authorize.lua (an authenticated request), rate-limit.lua
 * (an anonymous one, per IP) and signup-gate.lua (the trial-abuse alarm). See their Lua headers.
 */
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import { refusalOf, type Refusal } from './refusal'
import { num, statusOf, unexpected } from './reply'

export interface AuthorizeArgs {
  now: number
  accountId: string
  agentId: string | null
  tokenHash: string
  rateWindow: number
  prevRateWindow: number
  rateLimit: number
  /** The agent's ancestors, parent first (docs/api.md §8); none for the owner or a top-level agent. */
  chain?: readonly string[]
}

export type AuthorizeReply = { status: 'ok'; remaining: number; toWindowEndMs: number } | Refusal

export async function runAuthorize(ctx: RedisContext, a: AuthorizeArgs): Promise<AuthorizeReply> {
  const { keys } = ctx
  const chain = a.chain ?? []
  if (chain.length > 3) throw new Error(`authorize: a chain of ${chain.length} ancestors`)
  const agentKey = keys.agent(a.accountId, a.agentId)
  // Unused ancestor slots repeat the agent's own key: a fixed key count, one hash slot.
  const ancestors = [0, 1, 2].map((i) => (chain[i] ? keys.agent(a.accountId, chain[i]!) : agentKey))
  const reply = await ctx.scripts.authorize(
    [keys.account(a.accountId), agentKey, keys.rateWindow(a.accountId, a.agentId, a.rateWindow), keys.rateWindow(a.accountId, a.agentId, a.prevRateWindow), ...ancestors],
    chain.length ? [a.now, a.tokenHash, a.agentId ?? '', a.rateLimit, chain.join(',')] : [a.now, a.tokenHash, a.agentId ?? '', a.rateLimit],
  )
  if (statusOf(reply) === S.OK) return { status: 'ok', remaining: num(reply, 1), toWindowEndMs: num(reply, 2) }
  const refusal = refusalOf(reply)
  if (!refusal) throw unexpected('authorize.lua', reply)
  return refusal
}

export interface RateLimitArgs {
  now: number
  ip: string
  rateWindow: number
  prevRateWindow: number
  limit: number
}

export type RateLimitReply = { status: 'ok'; remaining: number; toWindowEndMs: number } | { status: 'rate_limited'; retryAfterMs: number; limit: number }

export async function runRateLimit(ctx: RedisContext, a: RateLimitArgs): Promise<RateLimitReply> {
  const { keys } = ctx
  const reply = await ctx.scripts.rateLimit([keys.ipRateWindow(a.ip, a.rateWindow), keys.ipRateWindow(a.ip, a.prevRateWindow)], [a.now, a.limit])
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', remaining: num(reply, 1), toWindowEndMs: num(reply, 2) }
    case S.RATE_LIMITED:
      // rate-limit.lua does not echo the limit (the caller gave it): named here like authorize's.
      return { status: 'rate_limited', retryAfterMs: num(reply, 2), limit: a.limit }
    default:
      throw unexpected('rate-limit.lua', reply)
  }
}

export type SignupGateReply = { status: 'ok'; countInWindow: number } | { status: 'signups_paused' }

export async function runSignupGate(ctx: RedisContext, a: { now: number; perHour: number; accountId: string }): Promise<SignupGateReply> {
  const { keys } = ctx
  const reply = await ctx.scripts.signupGate([keys.signupsPaused(), keys.signupsRecent()], [a.now, a.perHour, a.accountId])
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', countInWindow: num(reply, 1) }
    case S.SIGNUPS_PAUSED:
      return { status: 'signups_paused' }
    default:
      throw unexpected('signup-gate.lua', reply)
  }
}
