/**
 * Linking a chat to an account without a token ever entering the chat: the owner asks for a
 * one-time code (POST /v1/operator/link, owner token), and sends `/link <code>` to the bot. The code
 * is 128 random bits, stored only as its SHA-256, lives 10 minutes on the app clock (the Redis TTL
 * only cleans up) and is consumed atomically (GETDEL): two chats racing with one code cannot both win.
 */
import { and, eq } from 'drizzle-orm'
import { hashToken, randomId } from '../auth/tokens'
import type { Database } from '../db/client'
import { operatorChats } from '../db/schema'
import type { RedisContext } from '../redis/context'

export const LINK_TTL_S = 600
export const LINK_CODE = /^[A-Za-z0-9_-]{22}$/

export async function newLinkCode(ctx: RedisContext, accountId: string): Promise<{ code: string; expiresAt: number }> {
  const code = randomId(16)
  const expiresAt = ctx.clock.now() + LINK_TTL_S * 1000
  await ctx.redis.set(ctx.keys.operatorLink(hashToken(code)), `${accountId}|${expiresAt}`, 'EX', LINK_TTL_S)
  return { code, expiresAt }
}

/** The account the code was issued for, once; null when unknown, expired or already used. */
export async function claimLinkCode(ctx: RedisContext, code: string): Promise<string | null> {
  if (!LINK_CODE.test(code)) return null
  const stored = await ctx.redis.getdel(ctx.keys.operatorLink(hashToken(code)))
  const [accountId, expiresAt] = (stored ?? '').split('|')
  return accountId && Number(expiresAt) > ctx.clock.now() ? accountId : null
}

export interface ChatUser {
  chatId: string
  userId: string
}

/** A (chat, user) pair belongs to one account; linking again moves it. */
export async function linkChat(db: Database, who: ChatUser, accountId: string, at: number): Promise<void> {
  await db
    .insert(operatorChats)
    .values({ chatId: who.chatId, userId: who.userId, accountId, linkedAt: new Date(at) })
    .onConflictDoUpdate({ target: [operatorChats.chatId, operatorChats.userId], set: { accountId, linkedAt: new Date(at) } })
}

export async function linkedAccount(db: Database, who: ChatUser): Promise<string | null> {
  const [row] = await db
    .select({ accountId: operatorChats.accountId })
    .from(operatorChats)
    .where(and(eq(operatorChats.chatId, who.chatId), eq(operatorChats.userId, who.userId)))
  return row?.accountId ?? null
}

export async function unlinkChat(db: Database, who: ChatUser): Promise<boolean> {
  const gone = await db
    .delete(operatorChats)
    .where(and(eq(operatorChats.chatId, who.chatId), eq(operatorChats.userId, who.userId)))
    .returning({ a: operatorChats.accountId })
  return gone.length > 0
}
