/** Without TELEGRAM_BOT_TOKEN and TELEGRAM_WEBHOOK_SECRET the operator channel answers NOT_CONFIGURED. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { textUpdate } from '../fakes/telegram'
import { TG_SECRET } from '../helpers/events'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

describe('operator channel not configured', () => {
  test('POST /ops/telegram and POST /v1/operator/link → 503 NOT_CONFIGURED naming the feature', async () => {
    const owner = await t.signup()
    const link = await t.req('POST', '/v1/operator/link', { token: owner.token })
    expect(link.status).toBe(503)
    expect(link.body).toMatchObject({ error: 'NOT_CONFIGURED' })
    expect(link.body).toMatchObject({ feature: 'telegram', needs: expect.stringContaining('TELEGRAM_BOT_TOKEN') })
    const hook = await t.req('POST', '/ops/telegram', { body: textUpdate(1, 1, '/status'), headers: { 'x-telegram-bot-api-secret-token': TG_SECRET } })
    expect(hook.status).toBe(503)
    expect(hook.body.error).toBe('NOT_CONFIGURED')
  })
})
