/**
 * A dead letter is an entry the Redis balance already holds and Postgres does not (yet): the
 * founder replays it once its cause is fixed. A rebuild of the account meanwhile must count it, or
 * the restored balance gives back a dead-lettered debit (or drops a dead-lettered top-up), and the
 * replay then leaves Redis and Postgres apart for good.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { accountLedger } from '../../src/recovery/reconcile'
import { applyRebuild, planRebuild } from '../../src/recovery/rebuild'
import { listDeadLetters, replayDeadLetter } from '../../src/write-behind/dead-letters'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll, outboxMoney, pgLedger, redisBalance } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
  await t.s.flusher.ensureGroups()
})
afterAll(async () => {
  await t.close()
})

test('a debit waiting in the dead letters counts in the rebuilt balance; replayed, Redis and Postgres agree', async () => {
  const a = await t.signup()
  const call = () => t.req('POST', '/v1/call/test.echo', { token: a.token, body: { q: 'x' } })
  for (let i = 0; i < 2; i++) expect((await call()).status).toBe(200)
  await flushAll(t)
  expect((await call()).status).toBe(200)
  const debit = (await outboxMoney(t, a.account_id)).find((e) => e.kind === 'debit')!
  // Postgres refuses that one row (a constraint, as a conflicting row would): it is dead-lettered.
  await t.s.db.db.execute(sql.raw(`alter table ledger_entries add constraint refuse_one check (id <> '${debit.id}') not valid`))
  try {
    await flushAll(t)
  } finally {
    await t.s.db.db.execute(sql.raw('alter table ledger_entries drop constraint refuse_one'))
  }
  const [dead] = await listDeadLetters(t.s.ctx, 10)
  expect(dead?.entry.id).toBe(debit.id)
  const balance = await redisBalance(t, a.account_id)
  expect((await accountLedger(t.s.ctx, t.s.db.db, a.account_id)).sum).toBe(balance)

  // The account hash is lost; the rebuild restores it from Postgres, the outbox and the dead letters.
  await t.redis.del(t.s.ctx.keys.account(a.account_id))
  const r = await applyRebuild(t.s.ctx, await planRebuild(t.s.ctx, t.s.db.db, a.account_id))
  expect(r).toMatchObject({ restored: true, balance })
  expect(await redisBalance(t, a.account_id)).toBe(balance)

  expect(await replayDeadLetter(t.s.ctx, dead!.id)).not.toBeNull()
  await flushAll(t)
  const pg = await pgLedger(t, a.account_id)
  expect(pg.count).toBe(pg.distinct)
  expect(pg.sum).toBe(await redisBalance(t, a.account_id))
})
