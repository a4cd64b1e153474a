/**
 * Postgres down never blocks calls: a byok call whose vault (Postgres) cannot answer fails fast
 * with INTERNAL and charges nothing; house-lane calls go on as if nothing happened.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTcpProxy, type TcpProxy } from '../fakes/tcp-proxy'
import { createTestDatabase, startTestApp, type TestApp } from '../helpers/harness'
import { redisBalance } from '../helpers/ledger'

let t: TestApp
let relay: TcpProxy
let db: Awaited<ReturnType<typeof createTestDatabase>>
beforeAll(async () => {
  db = await createTestDatabase()
  relay = await startTcpProxy('127.0.0.1', 5432)
  const viaRelay = new URL(db.url)
  viaRelay.port = String(relay.port)
  t = await startTestApp({ database: { name: db.name, url: viaRelay.toString() }, env: { VAULT_MASTER_KEY: Buffer.alloc(32, 7).toString('base64') } })
})
afterAll(async () => {
  relay.up()
  await t.close()
  await relay.close()
  await db.drop()
})

// A hang would show as this test's own timeout: the vault's deadline is 3 s.
test('with Postgres cut, a byok call fails fast and charges nothing; a house call still works', async () => {
  const a = await t.signup()
  relay.down()
  try {
    const byok = await t.req('POST', '/v1/call/test.byok', { token: a.token, body: {} })
    expect(byok.status).toBe(500)
    expect(byok.body.error).toBe('INTERNAL')
    const house = await t.req('POST', '/v1/call/test.echo', { token: a.token, body: {} })
    expect(house.status).toBe(200)
    expect(await redisBalance(t, a.account_id)).toBe(495)
  } finally {
    relay.up()
  }
})
