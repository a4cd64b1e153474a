/** console-session.lua: whether an owner console session still stands, counted against the owner token's rate limit (see its Lua header). */
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import { num, statusOf, str, unexpected } from './reply'

export type ConsoleSessionReply = { status: 'ok'; csrf: string } | { status: 'unauthorized' } | { status: 'rate_limited'; retryAfterMs: number; limit: number }

export interface ConsoleSessionArgs {
  now: number
  accountId: string
  sessionIdHash: string
  rateWindow: number
  prevRateWindow: number
  rateLimit: number
}

export async function runConsoleSession(ctx: RedisContext, a: ConsoleSessionArgs): Promise<ConsoleSessionReply> {
  const { keys } = ctx
  const reply = await ctx.scripts.consoleSession(
    [keys.consoleSession(a.accountId, a.sessionIdHash), keys.account(a.accountId), keys.rateWindow(a.accountId, null, a.rateWindow), keys.rateWindow(a.accountId, null, a.prevRateWindow)],
    [a.now, a.rateLimit],
  )
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', csrf: str(reply, 1) }
    case S.UNAUTHORIZED:
      return { status: 'unauthorized' }
    case S.RATE_LIMITED:
      return { status: 'rate_limited', retryAfterMs: num(reply, 2), limit: num(reply, 3) }
    default:
      throw unexpected('console-session.lua', reply)
  }
}
