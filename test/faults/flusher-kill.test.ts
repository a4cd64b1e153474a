/**
 * Fault: the flusher process is killed (SIGKILL) after its Postgres commit and before its XACK.
 * Its entries stay pending on a consumer that never returns; another flusher takes them over
 * after the stale time and writes them again, and the unique entry ids make the second write a
 * no-op: Postgres holds each entry once, with the same sums as Redis.
 *
 *   bun test test/faults/flusher-kill.test.ts
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import { Flusher } from '../../src/write-behind/flusher'
import { accountLedger } from '../../src/recovery/reconcile'
import { startTestApp, type TestApp } from '../helpers/harness'
import { assertLedger } from '../helpers/invariants'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t?.close()
})

test('a flusher killed between the Postgres commit and the ack: redelivery creates no duplicate', async () => {
  const accounts = await Promise.all(Array.from({ length: 5 }, () => t.signup()))
  const rs = await Promise.all(
    accounts.flatMap((a) => Array.from({ length: 20 }, (_, i) => t.req('POST', `/v1/call/${i % 4 === 0 ? 'test.fail' : 'test.cheap'}`, { token: a.token, body: {} }))),
  )
  const ok = rs.filter((r) => r.status === 200).map((r) => r.body.call_id)
  const refunded = rs.filter((r) => r.status === 502).map((r) => r.body.call_id)
  expect(ok.length + refunded.length).toBe(100)

  const child = Bun.spawn([process.execPath, 'run', join(import.meta.dir, 'fixtures', 'flush-then-die.ts')], {
    cwd: join(import.meta.dir, '..', '..'),
    env: { ...process.env, REDIS_URL: t.s.cfg.REDIS_URL, REDIS_KEY_PREFIX: t.prefix, DATABASE_URL: t.db.url },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  await child.exited
  const out = await new Response(child.stdout).text()
  expect(child.signalCode, out + (await new Response(child.stderr).text())).toBe('SIGKILL')
  expect(out).toContain('committed; dying before the ack')

  // The commit landed, the ack did not: every entry is both in Postgres and pending in Redis.
  const led = await accountLedger(t.s.ctx, t.s.db.db, accounts[0]!.account_id)
  expect(led.postgres.count).toBeGreaterThan(0)
  expect(led.lines.every((l) => l.in === 'both')).toBe(true)
  const { keys, redis } = t.s.ctx
  const pending = (await redis.xpending(keys.outbox(keys.shardOf(accounts[0]!.account_id)), 'flusher')) as [number, ...unknown[]]
  expect(pending[0]).toBeGreaterThan(0)

  // A surviving flusher takes the dead consumer's entries over and writes them again.
  const survivor = new Flusher(t.s.ctx, t.s.db.db, { batch: 500, intervalMs: 10, staleMs: 100 })
  await Bun.sleep(150)
  await assertLedger({ ...t.s, flusher: survivor }, accounts.map((a) => ({ account: a.account_id })), { debits: ok, refunded })
  expect((await t.s.flusher.lag()).entries).toBe(0)
})
