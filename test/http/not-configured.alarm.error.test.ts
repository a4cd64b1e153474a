/**
 * NOT_CONFIGURED says "the operator has been signaled": the first refusal per missing feature logs
 * one warning, holds `not_configured:<feature>` in /status and in GET /admin/alarms; every refusal
 * counts in pab_not_configured_total{feature}. The body names the feature and the missing setting.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { textUpdate } from '../fakes/telegram'
import { TG_SECRET } from '../helpers/events'
import { startTestApp, type TestApp } from '../helpers/harness'

const ADMIN = 'founder-token-0123456789abcdef'
let bare: TestApp // no ADMIN_TOKEN, no VAULT_MASTER_KEY, no bot, sandbox payments
let founded: TestApp // ADMIN_TOKEN set, the rest missing
beforeAll(async () => {
  bare = await startTestApp()
  founded = await startTestApp({ env: { ADMIN_TOKEN: ADMIN } })
})
afterAll(async () => {
  await bare.close()
  await founded.close()
})

/** Every warning line the app logs from now on. */
function warnings(t: TestApp): { msg: string; fields: Record<string, unknown> }[] {
  const lines: { msg: string; fields: Record<string, unknown> }[] = []
  const warn = t.s.log.warn.bind(t.s.log)
  t.s.log.warn = (msg, fields = {}) => {
    lines.push({ msg, fields })
    warn(msg, fields)
  }
  return lines
}

const counted = (text: string, feature: string) =>
  Number(new RegExp(`^pab_not_configured_total\\{feature="${feature}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 'NaN')

const notConfiguredReasons = async (t: TestApp) =>
  ((await t.req('GET', '/status')).body.degraded as { reason: string; detail: string }[]).filter((r) => r.reason.startsWith('not_configured:'))

describe('NOT_CONFIGURED signals the operator', () => {
  test('each missing feature: one warning, a /status reason, a counter per refusal; the body names feature and setting', async () => {
    const t = bare
    const logged = warnings(t)
    const before = (await t.req('GET', '/metrics')).text
    for (const f of ['vault', 'admin', 'stripe', 'telegram']) expect([f, counted(before, f)]).toEqual([f, 0])
    expect(await notConfiguredReasons(t)).toEqual([])

    const owner = await t.signup()
    const refusals: [string, string, () => Promise<{ status: number; body: any }>][] = [
      ['vault', 'VAULT_MASTER_KEY', () => t.req('GET', '/v1/keys', { token: owner.token })],
      ['vault', 'VAULT_MASTER_KEY', () => t.req('GET', '/vault/nolink', { headers: { accept: 'application/json' } })],
      ['admin', 'ADMIN_TOKEN', () => t.req('GET', '/admin/parked', { token: 'whatever' })],
      ['stripe', 'PAYMENTS=stripe', () => t.req('POST', '/webhooks/stripe', { body: '{}' })],
      ['telegram', 'TELEGRAM_BOT_TOKEN', () => t.req('POST', '/v1/operator/link', { token: owner.token })],
      ['telegram', 'TELEGRAM_WEBHOOK_SECRET', () => t.req('POST', '/ops/telegram', { body: textUpdate(1, 1, '/status'), headers: { 'x-telegram-bot-api-secret-token': TG_SECRET } })],
    ]
    for (let round = 0; round < 2; round++)
      for (const [feature, needs, call] of refusals) {
        const r = await call()
        expect([feature, r.status, r.body.error, r.body.feature]).toEqual([feature, 503, 'NOT_CONFIGURED', feature])
        expect(r.body.needs).toContain(needs)
      }

    const after = (await t.req('GET', '/metrics')).text
    expect([counted(after, 'vault'), counted(after, 'admin'), counted(after, 'stripe'), counted(after, 'telegram')]).toEqual([4, 2, 2, 4])
    // Once per feature per process, not per request.
    const alarms = logged.filter((l) => l.msg === 'not_configured')
    expect(alarms.map((l) => l.fields.feature).sort()).toEqual(['admin', 'stripe', 'telegram', 'vault'])
    const reasons = await notConfiguredReasons(t)
    expect(reasons.map((r) => r.reason).sort()).toEqual(['not_configured:admin', 'not_configured:stripe', 'not_configured:telegram', 'not_configured:vault'])
    expect(reasons.find((r) => r.reason === 'not_configured:vault')!.detail).toContain('VAULT_MASTER_KEY')
    expect((await t.req('GET', '/status')).body.status).toBe('degraded')
  })

  test('GET /admin/alarms lists the features refused so far, for the founder only', async () => {
    const t = founded
    expect((await t.req('GET', '/admin/alarms', { token: ADMIN })).body).toEqual({ alarms: [] })
    const owner = await t.signup()
    expect((await t.req('POST', '/v1/keys/link', { token: owner.token, body: { provider: 'fakebyok' } })).status).toBe(503)
    expect((await t.req('POST', '/v1/keys/link', { token: owner.token, body: { provider: 'fakebyok' } })).status).toBe(503)
    const r = await t.req('GET', '/admin/alarms', { token: ADMIN })
    expect(r.status).toBe(200)
    expect(r.body.alarms).toEqual([{ kind: 'not_configured', feature: 'vault', needs: 'VAULT_MASTER_KEY', since: expect.any(String), refusals: 2 }])
    expect((await t.req('GET', '/admin/alarms', { token: owner.token })).status).toBe(403)
    expect((await t.req('GET', '/admin/alarms')).status).toBe(401)
    // Without ADMIN_TOKEN the alarm page itself is refused, and that refusal is signaled too.
    expect((await bare.req('GET', '/admin/alarms')).body).toMatchObject({ error: 'NOT_CONFIGURED', feature: 'admin' })
  })
})
