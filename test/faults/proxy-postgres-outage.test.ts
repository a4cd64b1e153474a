/**
 * Fault: Postgres unreachable (a TCP relay the test cuts; the machine's Postgres stays up for
 * everyone else) while the proxy serves. The vault lives in Postgres, yet Postgres being down never
 * blocks calls (docs/api.md §6): a house-key route is served with the house key after a short wait for
 * the vault; a byok route, which has no other key, fails after a bounded wait instead of hanging on
 * the database driver with VAULT_UNAVAILABLE (503) — its debit refunded, nothing forwarded. The API runs in its own process, as in
 * production, so the driver's connection errors stay there.
 *
 *   bun test test/faults/proxy-postgres-outage.test.ts
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream'
import { startTcpProxy, type TcpProxy } from '../fakes/tcp-proxy'
import { apiProcess, signupOver, type ApiProcess } from '../helpers/api-process'
import { cleanupAll } from '../helpers/cleanup'
import { createTestDatabase, deleteAppKeys } from '../helpers/harness'

let fake: FakeUpstream
let db: Awaited<ReturnType<typeof createTestDatabase>>
let relay: TcpProxy
let api: ApiProcess
const prefix = `fx${Math.random().toString(36).slice(2, 10)}`

beforeAll(async () => {
  fake = startFakeUpstream()
  fake.handler = () => Response.json({ ok: true })
  db = await createTestDatabase()
  relay = await startTcpProxy('127.0.0.1', 5432)
  const viaRelay = new URL(db.url)
  viaRelay.port = String(relay.port)
  api = await apiProcess({ databaseUrl: viaRelay.toString(), prefix, fakeUrl: fake.url })
  await api.start()
})
afterAll(() =>
  cleanupAll(
    () => relay?.up(),
    () => api?.dispose(),
    () => deleteAppKeys({ REDIS_URL: api.env.REDIS_URL! }, prefix),
    () => relay?.close(),
    () => fake?.stop(),
    () => db?.drop(),
  ),
)

const post = (token: string, provider: string) =>
  fetch(`${api.url}/proxy/${provider}/v1/chat`, { method: 'POST', body: '{}', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } })
const balance = async (token: string) => ((await (await fetch(`${api.url}/v1/balance`, { headers: { authorization: `Bearer ${token}` } })).json()) as { balance: number }).balance

test('Postgres down: house-key proxy routes keep serving with the house key; byok routes fail fast, uncharged', async () => {
  const [house, byok] = await signupOver(api.url, 2, prefix)
  relay.down()
  // Wait until the API itself sees Postgres gone.
  for (let i = 0; i < 100; i++) {
    const s = (await (await fetch(`${api.url}/status`)).json()) as { postgres: string }
    if (s.postgres === 'down') break
    await Bun.sleep(100)
  }

  const before = fake.seen.length
  const r = await post(house!.token, 'fake')
  expect(r.status).toBe(200)
  expect(await r.json()).toEqual({ ok: true })
  expect(fake.seen.length).toBe(before + 1)
  expect(fake.seen.at(-1)!.headers.authorization).toBe('Bearer house-secret-key')

  const started = Date.now()
  const b = await post(byok!.token, 'fakebyok')
  expect(b.status).toBe(503)
  expect(await b.json()).toMatchObject({ error: 'VAULT_UNAVAILABLE', provider: 'fakebyok', refunded: true })
  expect(Date.now() - started).toBeLessThan(10_000)
  expect(fake.seen.length).toBe(before + 1)

  expect(await balance(house!.token)).toBe(497)
  expect(await balance(byok!.token)).toBe(500)
  expect(await api.log()).toContain('"msg":"vault_unavailable"')
}, 60_000)
