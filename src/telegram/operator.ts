/**
 * The operator messaging channel (a Telegram bot): link codes for the owner, and the Bot API
 * webhook that runs chat commands. Telegram proves itself with the secret token it echoes in
 * `X-Telegram-Bot-Api-Secret-Token` (compared in constant time). Updates are handled once each
 * (Telegram redelivers until it gets a 2xx; one whose run failed is unmarked, so its redelivery
 * runs it), and the answer is always 2xx once the secret is right,
 * so a command the bot cannot act on is not redelivered forever.
 * errors: NOT_CONFIGURED (no bot token or webhook secret), UNAUTHORIZED (secret missing or wrong).
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { notConfigured } from '../alarms/not-configured'
import type { DbHandle } from '../db/client'
import type { MandateDeps } from '../mandate/mandate'
import { runCommand } from './commands'
import { newLinkCode, unlinkAccount } from './links'
import { proposalDeps } from '../proposals/deps'
import type { BotApi } from './botapi'


/** What the operator channel uses of the process's services (a proposal's approval tops up through the mandate). */
export interface TelegramDeps extends MandateDeps {
  db: DbHandle
  bot: BotApi | null
}

const UPDATE_DEDUPE_S = 86400

function requireBot(s: TelegramDeps) {
  if (!s.bot || !s.cfg.TELEGRAM_WEBHOOK_SECRET) throw notConfigured('telegram')
  return s.bot
}

/** `ownerHash`: the asking owner token's SHA-256 (the account's current owner when not given). */
export async function operatorLink(s: TelegramDeps, accountId: string, ownerHash?: string) {
  requireBot(s)
  const { code, expiresAt } = await newLinkCode(s.ctx, accountId, ownerHash)
  return { code, command: `/link ${code}`, expires_at: new Date(expiresAt).toISOString() }
}

/**
 * After the owner token was replaced (a rotation, an e-mail recovery): the chats linked with the
 * old one stop acting for the account and receiving its events, as its console sessions end. A
 * Postgres failure here is logged, not answered: the rotation itself has happened.
 */
export async function endChatLinks(s: TelegramDeps, accountId: string): Promise<void> {
  try {
    const n = await unlinkAccount(s.db.db, accountId)
    if (n > 0) s.log.info('operator_chats_unlinked', { account_id: accountId, chats: n })
  } catch (e) {
    s.log.error('operator_chats_unlink_failed', { account_id: accountId, error: e instanceof Error ? e.message : String(e) })
  }
}

const digest = (v: string) => createHash('sha256').update(v).digest()

export interface Update {
  update_id: number
  /** `sender_chat`: sent as a channel or an anonymous group admin (`from` is then a placeholder bot). */
  message?: { chat: { id: number }; from?: { id: number }; sender_chat?: { id: number }; text?: string }
  /** A tap on an inline keyboard button (a new proposal's Approve / Decline): its data is a command. */
  callback_query?: { id: string; from: { id: number }; message?: { chat: { id: number } }; data?: string }
}

/** True when the header holds the webhook secret; NOT_CONFIGURED without a bot. */
export function checkTelegramSecret(s: TelegramDeps, secretHeader: string | null): boolean {
  requireBot(s)
  // Digests first: equal lengths for timingSafeEqual, and no early exit on a length mismatch.
  return !!secretHeader && timingSafeEqual(digest(secretHeader), digest(s.cfg.TELEGRAM_WEBHOOK_SECRET!))
}

/** Runs one update (the secret already checked by the route). */
export async function telegramUpdate(s: TelegramDeps, update: Update): Promise<{ ok: boolean }> {
  const bot = requireBot(s)
  const seen = s.ctx.keys.telegramUpdate(update.update_id)
  const fresh = await s.ctx.redis.set(seen, '1', 'EX', UPDATE_DEDUPE_S, 'NX')
  if (fresh !== 'OK') return { ok: true }
  try {
    return await runUpdate(s, bot, update)
  } catch (e) {
    // The failure is answered 500 and Telegram redelivers the update: it must find it unmarked and
    // run it then, not be told it already ran (a /kill lost to a database hiccup, silently).
    await s.ctx.redis.del(seen).catch(() => {})
    throw e
  }
}

const AS_YOURSELF = 'Send commands as yourself: a message sent as a channel or an anonymous admin does not say who sent it, so it links nothing and commands nothing.'

async function runUpdate(s: TelegramDeps, bot: BotApi, update: Update): Promise<{ ok: boolean }> {
  const deps = { ctx: s.ctx, db: s.db.db, proposals: proposalDeps(s) }
  const tap = update.callback_query
  if (tap) {
    // The same command, from the same (chat, user) pair, as if typed: a button decides nothing more.
    if (!tap.data || !tap.message) return { ok: true }
    const who = { chatId: String(tap.message.chat.id), userId: String(tap.from.id) }
    const reply = await runCommand(deps, who, tap.data)
    await bot.answerCallbackQuery(tap.id, reply)
    const sent = await bot.sendMessage(who.chatId, reply)
    if (!sent.ok) s.log.warn('telegram_reply_failed', { chat_id: who.chatId, error: sent.error })
    return { ok: true }
  }
  const msg = update.message
  if (!msg?.text || !msg.from) return { ok: true }
  const who = { chatId: String(msg.chat.id), userId: String(msg.from.id) }
  // Sent as a channel or an anonymous admin, a message's `from` is one placeholder bot shared by
  // every such sender (GroupAnonymousBot, Channel_Bot): no person is known to link or to command.
  const reply = msg.sender_chat ? AS_YOURSELF : await runCommand(deps, who, msg.text)
  const sent = await bot.sendMessage(who.chatId, reply)
  if (!sent.ok) s.log.warn('telegram_reply_failed', { chat_id: who.chatId, error: sent.error })
  return { ok: true }
}
