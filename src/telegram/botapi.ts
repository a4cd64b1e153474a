/**
 * The few Bot API calls the operator channel makes: sendMessage and answerCallbackQuery, to TELEGRAM_API_BASE.
 * The bot token is part of the Bot API URL, so a URL is never logged or put in an error.
 */
import type { AttemptResult } from '../delivery-attempt'

/** A button of an inline keyboard: its label and the data sent back when tapped (≤ 64 bytes). */
export interface InlineButton {
  text: string
  callback_data: string
}

const TIMEOUT_MS = 10_000
/** Telegram's limits, in UTF-16 code units as it counts them: a message, a callback notice. */
const MAX_TEXT = 4096
const MAX_NOTICE = 200

/**
 * The text cut to `max` UTF-16 units, never between the two halves of a surrogate pair: a lone
 * half is not text, and Telegram refuses the message (`can't parse`) or shows U+FFFD.
 */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text
  const last = text.charCodeAt(max - 1)
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max)
}

export class BotApi {
  constructor(
    private base: string,
    private token: string,
  ) {}

  /** `buttons`: an inline keyboard under the message; a tap comes back as a callback_query update. */
  async sendMessage(chatId: string, text: string, buttons?: InlineButton[][] | null): Promise<AttemptResult> {
    const body: Record<string, unknown> = { chat_id: chatId, text: cutText(text, MAX_TEXT), disable_web_page_preview: true }
    if (buttons) body.reply_markup = { inline_keyboard: buttons }
    return this.post('sendMessage', body)
  }

  /** Stops the tapped button's spinner; `text` shows briefly as a notice. */
  answerCallbackQuery(callbackQueryId: string, text: string): Promise<AttemptResult> {
    return this.post('answerCallbackQuery', { callback_query_id: callbackQueryId, text: cutText(text, MAX_NOTICE) })
  }

  private async post(method: string, payload: Record<string, unknown>): Promise<AttemptResult> {
    try {
      const res = await fetch(`${this.base.replace(/\/$/, '')}/bot${this.token}/${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(payload),
        redirect: 'manual',
        signal: AbortSignal.timeout(TIMEOUT_MS),
      })
      const body = (await res.json().catch(() => null)) as { ok?: boolean; description?: string } | null
      const ok = res.ok && body?.ok === true
      return { ok, code: res.status, error: ok ? null : `Bot API: ${String(body?.description ?? `HTTP ${res.status}`).slice(0, 200)}` }
    } catch (e) {
      return { ok: false, code: null, error: `Bot API unreachable: ${e instanceof Error ? e.name : 'error'}` }
    }
  }
}
