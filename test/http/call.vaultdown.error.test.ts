/**
 * Postgres down never blocks calls: a byok call whose vault (Postgres) cannot answer fails fast
 * with VAULT_UNAVAILABLE (503, a refusal the caller can retry) and its debit is refunded; house-lane
 * calls go on as if nothing happened.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTcpProxy, type TcpProxy } from '../fakes/tcp-proxy'
import { createTestDatabase, startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, redisBalance } from '../helpers/ledger'
import { eventually } from '../helpers/proxy'
import { recentCalls } from '../../src/paid-request/calls'

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
test('with Postgres cut, a byok call fails fast with VAULT_UNAVAILABLE, refunded; a house call still works', async () => {
  const a = await t.signup()
  relay.down()
  try {
    const started = Date.now()
    const byok = await t.req('POST', '/v1/call/test.byok', { token: a.token, body: {} })
    expect(Date.now() - started).toBeLessThan(10_000)
    expect(byok.status).toBe(503)
    expect(byok.body).toMatchObject({ error: 'VAULT_UNAVAILABLE', provider: 'fakebyok', refunded: true, retry_after_s: 5 })
    expect(byok.headers.get('retry-after')).toBe('5')
    expect(await redisBalance(t, a.account_id)).toBe(500)
    const entries = await checkRedisInvariant(t, a.account_id)
    expect(entries.map((e) => e.kind)).toEqual(['grant', 'debit', 'refund'])
    // /v1/activity also reads Postgres, which is cut: the filed call is read from Redis' recent list.
    const filed = await eventually(() => recentCalls(t.s.ctx, a.account_id), (x) => x.length === 1)
    expect(filed[0]).toMatchObject({ slug: 'test.byok', outcome: 'no_key', refunded: true })
    const house = await t.req('POST', '/v1/call/test.echo', { token: a.token, body: {} })
    expect(house.status).toBe(200)
    expect(await redisBalance(t, a.account_id)).toBe(495)
  } finally {
    relay.up()
  }
})
