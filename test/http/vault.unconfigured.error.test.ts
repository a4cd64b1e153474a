import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { startTestApp, type TestApp } from '../helpers/harness'
import { newMasterKey } from '../helpers/vault'
import { KeyVault } from '../../src/vault/store'

let t: TestApp
beforeAll(async () => {
  // No VAULT_MASTER_KEY: the deployment has no vault.
  t = await startTestApp({ env: { RATE_LIMIT_PER_IP: '100000' } })
})
afterAll(async () => {
  await t.close()
})

const notConfigured = (r: { status: number; body: any }) => {
  expect(r.status).toBe(503)
  expect(r.body).toMatchObject({ error: 'NOT_CONFIGURED', feature: 'vault' })
}

describe('without VAULT_MASTER_KEY the vault answers NOT_CONFIGURED', () => {
  test('link creation, listing and deletion', async () => {
    const a = await t.signup()
    notConfigured(await t.req('POST', '/v1/keys/link', { token: a.token, body: { provider: 'fakebyok' } }))
    notConfigured(await t.req('GET', '/v1/keys', { token: a.token }))
    notConfigured(await t.req('DELETE', '/v1/keys/fakebyok', { token: a.token }))
  })

  test('the pages, as JSON and as a readable page with the same status', async () => {
    const code = randomBytes(32).toString('base64url')
    notConfigured(await t.req('GET', `/vault/${code}`, { headers: { accept: 'application/json' } }))
    notConfigured(await t.req('POST', `/vault/${code}`, { body: { key: 'sk-anything-1234' }, headers: { accept: 'application/json' } }))
    const page = await t.req('GET', `/vault/${code}`, { headers: { accept: 'text/html' } })
    expect(page.status).toBe(503)
    expect(page.headers.get('content-type')).toStartWith('text/html')
    expect(page.text).toContain('NOT_CONFIGURED')
  })

  test('a byok call: no stored key → BYOK_REQUIRED; a stored key it cannot read → NOT_CONFIGURED', async () => {
    const a = await t.signup()
    const none = await t.req('POST', '/v1/call/test.byok', { token: a.token, body: {} })
    expect(none.status).toBe(402)
    expect(none.body.error).toBe('BYOK_REQUIRED')
    // A row left from when the deployment had a master key (set up directly: the API cannot).
    await new KeyVault(t.s.db.db, newMasterKey(), t.clock).store(a.account_id, 'fakebyok', 'sk-orphaned-row-ORPH')
    notConfigured(await t.req('POST', '/v1/call/test.byok', { token: a.token, body: {} }))
    expect((await t.req('GET', '/v1/balance', { token: a.token })).body.balance).toBe(500)
  })
})
