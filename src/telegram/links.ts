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
import { readAccount } from '../redis/account-hash'

export const LINK_TTL_S = 600
export const LINK_CODE = /^[A-Za-z0-9_-]{22}$/

/** `ownerHash`: the SHA-256 of the owner token asking (the account's current owner when not given). */
export async function newLinkCode(ctx: RedisContext, accountId: string, ownerHash?: string): Promise<{ code: string; expiresAt: number }> {
  const code = randomId(16)
  const expiresAt = ctx.clock.now() + LINK_TTL_S * 1000
  const owner = ownerHash ?? (await readAccount(ctx, accountId, 'owner')).owner ?? ''
  await ctx.redis.set(ctx.keys.operatorLink(hashToken(code)), `${accountId}|${expiresAt}|${owner}`, 'EX', LINK_TTL_S)
  return { code, expiresAt }
}

/**
 * The account the code was issued for, once; null when unknown, expired, already used, or issued
 * by an owner token that is no longer the account's.
 */
export async function claimLinkCode(ctx: RedisContext, code: string): Promise<{ accountId: string; giveBack: () => Promise<void> } | null> {
  if (!LINK_CODE.test(code)) return null
  const key = ctx.keys.operatorLink(hashToken(code))
  const stored = await ctx.redis.getdel(key)
  const [accountId, expiresAt, ownerHash] = (stored ?? '').split('|')
  if (!accountId || !(Number(expiresAt) > ctx.clock.now())) return null
  const { owner } = await readAccount(ctx, accountId, 'owner')
  if (!ownerHash || owner !== ownerHash) return null
  // For a link that failed to be written: the code works again for what is left of its life.
  const giveBack = async () => {
    const left = Number(expiresAt) - ctx.clock.now()
    if (left > 0) await ctx.redis.set(key, stored!, 'PX', left, 'NX')
  }
  return { accountId, giveBack }
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

/** Ends every chat link of the account (its owner token was replaced). */
export async function unlinkAccount(db: Database, accountId: string): Promise<number> {
  const gone = await db.delete(operatorChats).where(eq(operatorChats.accountId, accountId)).returning({ c: operatorChats.chatId })
  return gone.length
}
