/**
 * The few Bot API calls the operator channel makes: sendMessage, to TELEGRAM_API_BASE.
 * The bot token is part of the Bot API URL, so a URL is never logged or put in an error.
 */
import type { AttemptResult } from '../events/webhook-send'

const TIMEOUT_MS = 10_000
/** Telegram's limit on one message. */
const MAX_TEXT = 4096

export class BotApi {
  constructor(
    private base: string,
    private token: string,
  ) {}

  async sendMessage(chatId: string, text: string): Promise<AttemptResult> {
    try {
      const res = await fetch(`${this.base.replace(/\/$/, '')}/bot${this.token}/sendMessage`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ chat_id: chatId, text: text.slice(0, MAX_TEXT), disable_web_page_preview: true }),
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
