/**
 * One webhook delivery, signed per the Standard Webhooks spec with the `standardwebhooks` library:
 * headers `webhook-id` (the event id: the same on every retry, so receivers dedupe on it),
 * `webhook-timestamp` and `webhook-signature` (`v1,<base64 HMAC-SHA256 of id.timestamp.body>`).
 *
 * The timestamp is the wall clock at sending, not the app clock: receivers compare it with their
 * own clock to refuse replays, so it must be the real time of this attempt.
 * Redirects are not followed (an endpoint must answer itself; a redirect could point anywhere).
 */
import { Webhook } from 'standardwebhooks'
import type { OwnerEvent } from './types'

export const WEBHOOK_TIMEOUT_MS = 10_000

export interface AttemptResult {
  ok: boolean
  /** HTTP status of the answer; null when none came (network error, timeout). */
  code: number | null
  error: string | null
}

/** The JSON body of a delivery (Standard Webhooks shape: type, timestamp, data). */
export function webhookPayload(ev: OwnerEvent): string {
  return JSON.stringify({ id: ev.id, type: ev.type, timestamp: new Date(ev.at).toISOString(), account_id: ev.accountId, data: ev.data })
}

export async function sendWebhook(url: string, secret: string, ev: OwnerEvent): Promise<AttemptResult> {
  const body = webhookPayload(ev)
  const sentAt = new Date()
  const signature = new Webhook(secret).sign(ev.id, sentAt, body)
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'prepaid-agent-balance-webhooks/1',
        'webhook-id': ev.id,
        'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
        'webhook-signature': signature,
      },
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
    })
    await res.body?.cancel().catch(() => {})
    const ok = res.status >= 200 && res.status < 300
    return { ok, code: res.status, error: ok ? null : `HTTP ${res.status}` }
  } catch (e) {
    return { ok: false, code: null, error: e instanceof Error ? `${e.name}: ${e.message}`.slice(0, 200) : 'network error' }
  }
}
