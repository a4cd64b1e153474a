/**
 * Poison the earlier rounds did not cover: entries whose fields are missing, or whose kind names a
 * property every JavaScript object has. Each alone must be dead-lettered — neither acked without a
 * row (a lost entry) nor left at the head of its shard (every later entry held back forever) —
 * while the good entries around it commit.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { Flusher } from '../../src/write-behind/flusher'
import { startTestApp, type TestApp } from '../helpers/harness'
import { pgLedger, redisBalance } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
  await t.s.flusher.ensureGroups()
})
afterAll(async () => {
  await t.close()
})

const rand = () => Math.random().toString(36).slice(2, 10)

/**
 * Puts `poison` between an account's real entries on its shard, drains with a flusher of its own,
 * and answers where the poison went: still in the outbox, dead-lettered (with the error), or acked.
 */
async function fateOf(poison: Record<string, string>) {
  const a = await t.signup()
  const shard = t.s.ctx.keys.shardOf(a.account_id)
  const outbox = t.s.ctx.keys.outbox(shard)
  const id = (await t.redis.xadd(outbox, '*', ...Object.entries({ acct: a.account_id, ...poison }).flat()))!
  expect((await t.req('POST', '/v1/call/test.cheap', { token: a.token, body: {} })).status).toBe(200)
  const flusher = new Flusher(t.s.ctx, t.s.db.db, { batch: 4, intervalMs: 10 })
  for (let i = 0; i < 10; i++) {
    try {
      if ((await flusher.flushOnce()) === 0) break
    } catch {}
  }
  await flusher.stop(0)
  const left = (await t.redis.xrange(outbox, id, id)).length > 0
  const dead = (await t.redis.xrange(t.s.ctx.keys.deadLetters(shard), '-', '+')).find(([, raw]) => raw[raw.indexOf('src') + 1] === id)
  const ledger = await pgLedger(t, a.account_id)
  return { where: left ? 'outbox' : dead ? 'dead_letters' : 'acked', error: dead?.[1][dead[1].indexOf('error') + 1], ledgerOk: ledger.sum === (await redisBalance(t, a.account_id)) }
}

describe('poison with a field missing, or a kind every object has', () => {
  test('an owner entry without its token hash, or for an account Postgres lacks, is dead-lettered, and holds no later entry back', async () => {
    // No token hash: the sink's update had nothing to set and threw an error of no known class (the shard held forever).
    expect(await fateOf({ kind: 'owner', id: `own_${rand()}` })).toMatchObject({ where: 'dead_letters', ledgerOk: true })
    // No account, or one whose own entry never reached Postgres: the update matched no row and was acked (the rotation lost).
    for (const acct of ['', `acc_00_${rand()}`]) expect(await fateOf({ kind: 'owner', id: `own_${rand()}`, acct, owner: `hash_${rand()}` })).toMatchObject({ where: 'dead_letters', ledgerOk: true })
  })

  test('an entry whose kind is an Object.prototype member (constructor, toString, valueOf) is dead-lettered, not acked unwritten', async () => {
    for (const kind of ['constructor', 'toString', 'valueOf', 'hasOwnProperty']) {
      const fate = await fateOf({ kind, id: `k_${rand()}` })
      expect({ kind, ...fate }).toMatchObject({ kind, where: 'dead_letters', error: `outbox: no sink for entry kind "${kind}"`, ledgerOk: true })
    }
  })

  test('a call entry without its record is dead-lettered, not acked unwritten', async () => {
    for (const rec of [undefined, '']) {
      const fate = await fateOf({ kind: 'call', id: `call_${rand()}:call`, ...(rec === undefined ? {} : { rec }) })
      expect(fate).toMatchObject({ where: 'dead_letters', ledgerOk: true })
    }
    // Its neighbours' calls were filed.
    const rows = (await t.s.db.db.execute(sql`select count(*)::int as n from calls`)) as unknown as { n: number }[]
    expect(rows[0]!.n).toBeGreaterThanOrEqual(2)
  })
})
