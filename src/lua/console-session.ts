/** console-session-2: whether an owner console session still stands (see its Lua header). */
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import { statusOf, str, unexpected } from './reply'

export type ConsoleSessionReply = { status: 'ok'; csrf: string } | { status: 'unauthorized' }

export async function runConsoleSession(ctx: RedisContext, a: { now: number; accountId: string; sessionIdHash: string }): Promise<ConsoleSessionReply> {
  const { keys } = ctx
  const reply = await ctx.scripts.consoleSession([keys.consoleSession(a.accountId, a.sessionIdHash), keys.account(a.accountId)], [a.now])
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', csrf: str(reply, 1) }
    case S.UNAUTHORIZED:
      return { status: 'unauthorized' }
    default:
      throw unexpected('console-session-2', reply)
  }
}
