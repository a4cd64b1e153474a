/** Moving owner events along in tests: outbox → Postgres (the flusher), then due deliveries sent. */
import type { TestApp } from './harness'
import { flushAll } from './ledger'
import type { FakeTelegram } from '../fakes/telegram'

export const TG_SECRET = 'test-telegram-webhook-secret-0123456789'

/** Env of an app whose operator channel talks to the fake Bot API. */
export function telegramEnv(tg: FakeTelegram): Record<string, string> {
  return { TELEGRAM_BOT_TOKEN: tg.token, TELEGRAM_WEBHOOK_SECRET: TG_SECRET, TELEGRAM_API_BASE: tg.url }
}

/**
 * Flushes the outbox, then runs the delivery worker until nothing is due at the clock's now; every
 * send it started has ended (the worker does not wait for its sends itself).
 */
export async function deliverAll(t: TestApp): Promise<void> {
  await flushAll(t)
  for (let i = 0; i < 100; i++) {
    const started = await t.s.deliveries.runOnce()
    await t.s.deliveries.idle()
    if (started === 0) return
  }
  throw new Error('deliveries did not settle')
}

/** Sends one Bot API update to POST /ops/telegram with the right secret. */
export function telegramPost(t: TestApp, update: unknown, secret = TG_SECRET) {
  return t.req('POST', '/ops/telegram', { body: update, headers: { 'x-telegram-bot-api-secret-token': secret } })
}

/** A webhook endpoint for an owner, with the receiver holding the secret shown once. */
export async function subscribe(t: TestApp, ownerToken: string, receiver: { url: string; secret: string | null }, events?: string[]) {
  const r = await t.req('PUT', '/v1/webhooks', { token: ownerToken, body: { url: receiver.url, ...(events ? { events } : {}) } })
  if (r.status !== 200) throw new Error(`PUT /v1/webhooks: ${r.status} ${r.text}`)
  receiver.secret = r.body.secret
  return r.body
}
