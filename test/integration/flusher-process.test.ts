/**
 * The flusher as its own process (`bun run flusher`): an API without a flusher takes calls, the
 * separate process moves every entry to Postgres exactly once and drains on SIGTERM. Without
 * DATABASE_URL it refuses to start (PGlite is private to one process).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import { startTestApp, REDIS_URL, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, pgLedger } from '../helpers/ledger'

const root = join(import.meta.dir, '..', '..')
let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

test('a separate flusher process drains the outbox exactly once and stops cleanly', async () => {
  const a = await t.signup()
  for (let i = 0; i < 20; i++) await t.req('POST', '/v1/call/test.cheap', { token: a.token, body: {} })
  const entries = await checkRedisInvariant(t, a.account_id)
  const env = {
    ...(process.env as Record<string, string>),
    DATABASE_URL: t.db.url,
    REDIS_URL,
    REDIS_KEY_PREFIX: t.prefix,
    LOG: 'silent',
    FLUSH_INTERVAL_MS: '10',
  }
  const p = Bun.spawn([process.execPath, 'run', 'src/flusher-main.ts'], { cwd: root, env, stdout: 'ignore', stderr: 'pipe' })
  try {
    let pg = await pgLedger(t, a.account_id)
    for (let i = 0; i < 200 && pg.count < entries.length; i++) {
      await Bun.sleep(50)
      pg = await pgLedger(t, a.account_id)
    }
    expect(pg).toEqual({ count: entries.length, distinct: entries.length, sum: 480 })
  } finally {
    p.kill('SIGTERM')
  }
  expect(await p.exited).toBe(0)
})

test('without DATABASE_URL the flusher process refuses to start, naming why', async () => {
  const env: Record<string, string> = { ...(process.env as Record<string, string>), LOG: 'silent' }
  delete env.DATABASE_URL
  const p = Bun.spawn([process.execPath, 'run', 'src/flusher-main.ts'], { cwd: root, env, stdout: 'ignore', stderr: 'pipe' })
  expect(await p.exited).toBe(2)
  expect(await new Response(p.stderr).text()).toContain('DATABASE_URL')
})
