import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Flusher } from '../../src/write-behind/flusher'
import { parseOutboxEntry, type OutboxEntry } from '../../src/write-behind/outbox'
import { SINKS } from '../../src/sinks'
import { connectPostgres, type Database } from '../../src/db/client'
import { pgUrl, startTestApp, type TestApp } from '../helpers/harness'
import { startTcpProxy, type TcpProxy } from '../fakes/tcp-proxy'
import { checkRedisInvariant, flushAll, outboxMoney, pgLedger, redisBalance } from '../helpers/ledger'

let t: TestApp
let pgRelay: TcpProxy
beforeAll(async () => {
  pgRelay = await startTcpProxy('127.0.0.1', 5432)
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
  await pgRelay.close()
})

const calls = (token: string, n: number, slug = 'test.cheap') =>
  Promise.all(Array.from({ length: n }, () => t.req('POST', `/v1/call/${slug}`, { token, body: {} })))

describe('the write-behind flusher', () => {
  test('after a flush Postgres holds every entry exactly once, with the same sums', async () => {
    const a = await t.signup()
    const rs = await calls(a.token, 30)
    expect(rs.every((r) => r.status === 200)).toBe(true)
    await calls(a.token, 5, 'test.fail')
    const entries = await checkRedisInvariant(t, a.account_id)
    await flushAll(t)
    expect(await pgLedger(t, a.account_id)).toEqual({ count: entries.length, distinct: entries.length, sum: await redisBalance(t, a.account_id) })
    // Acked entries leave the stream; the activity rows reached Postgres too.
    expect((await t.s.flusher.lag()).entries).toBe(0)
    const act = await t.req('GET', '/v1/activity?limit=200', { token: a.token })
    expect(act.status, act.text).toBe(200)
    expect(act.body.calls).toHaveLength(35)
  })

  test('Postgres down never blocks calls; the backlog drains when it returns, nothing lost', async () => {
    // The API keeps its own Postgres connection; this flusher reaches the same database through
    // a relay the test cuts and restores (the machine's Postgres stays up for everyone else).
    const flusher = new Flusher(t.s.ctx, connectPostgres(relayUrl(), 2).db, { batch: 50, intervalMs: 10 })
    await flusher.ensureGroups()
    const a = await t.signup()
    pgRelay.down()
    const during = await calls(a.token, 40)
    expect(during.every((r) => r.status === 200)).toBe(true)
    await expect(flusher.flushOnce()).rejects.toThrow()
    // Every debit waits in the outbox; a batch's debits share one stream entry (packed_debits), which
    // is what the lag counts.
    expect((await outboxMoney(t, a.account_id)).length).toBeGreaterThanOrEqual(41)
    expect((await t.s.flusher.lag()).entries).toBeGreaterThan(0)
    const status = await t.req('GET', '/status')
    expect(status.body.ledger_lag.entries).toBeGreaterThan(0)
    pgRelay.up()
    for (let i = 0; i < 50 && (await flusher.flushOnce()) > 0; i++);
    const entries = await outboxMoney(t, a.account_id)
    expect(entries).toHaveLength(0) // all acked and deleted
    expect(await pgLedger(t, a.account_id)).toEqual({ count: 41, distinct: 41, sum: 460 })
  })

  test('a crash between the Postgres commit and the ack: redelivery creates no duplicate', async () => {
    const a = await t.signup()
    await calls(a.token, 10)
    const key = t.s.ctx.keys.outbox(t.s.ctx.keys.shardOf(a.account_id))
    const flusher = new Flusher(t.s.ctx, t.s.db.db, { batch: 1000, intervalMs: 10 })
    await flusher.ensureGroups()
    // Read and commit as this consumer, then "crash" before XACK.
    const res = (await t.s.ctx.redis.xreadgroup('GROUP', 'flusher', flusher.consumer, 'COUNT', 1000, 'STREAMS', key, '>')) as [string, [string, string[]][]][]
    const entries: OutboxEntry[] = res[0]![1].flatMap(([streamId, f]) => parseOutboxEntry(streamId, f))
    await t.s.db.db.transaction(async (tx) => {
      for (const kind of new Set(entries.map((e) => e.kind))) await SINKS[kind]!(tx as unknown as Database, entries.filter((e) => e.kind === kind))
    })
    // Restarted, the same consumer finds them pending and writes them again.
    expect(await flusher.flushOnce()).toBeGreaterThan(0)
    await flushAll(t)
    expect(await pgLedger(t, a.account_id)).toEqual({ count: 11, distinct: 11, sum: 490 })
  })

  test('an ack Redis never answered (it restarted): the next round acks the committed entries from the pending list, without waiting for the reclaim', async () => {
    const a = await t.signup()
    await calls(a.token, 10)
    let failAcks = 1
    const scripts = {
      ...t.s.ctx.scripts,
      ackOutbox: (keys: string[], argv: (string | number)[]) => {
        if (failAcks-- > 0) return Promise.reject(new Error('Connection is closed.'))
        return t.s.ctx.scripts.ackOutbox(keys, argv)
      },
    }
    // A reclaim far away: only the pending-list read can bring the entries back.
    const flusher = new Flusher({ ...t.s.ctx, scripts }, t.s.db.db, { batch: 1000, intervalMs: 10, staleMs: 3_600_000 })
    await flusher.ensureGroups()
    await expect(flusher.flushOnce()).rejects.toThrow('Connection is closed.')
    expect((await outboxMoney(t, a.account_id)).length).toBeGreaterThan(0) // committed, not acked
    expect(await flusher.flushOnce()).toBeGreaterThan(0)
    expect(await outboxMoney(t, a.account_id)).toHaveLength(0)
    await flushAll(t)
    expect(await pgLedger(t, a.account_id)).toEqual({ count: 11, distinct: 11, sum: 490 })
  })

  test('a read resent after a reconnect: what the lost first read left pending is flushed next round, without waiting for the reclaim', async () => {
    const a = await t.signup()
    // A reclaim far away: only the pending-list read can bring the entries back.
    const flusher = new Flusher(t.s.ctx, t.s.db.db, { batch: 1000, intervalMs: 10, staleMs: 3_600_000 })
    await flusher.ensureGroups()
    try {
      // Healthy rounds: nothing is pending, so rounds read only new entries.
      for (let i = 0; i < 50 && (await flusher.flushOnce()) > 0; i++);
      expect(await flusher.flushOnce()).toBe(0)
      await calls(a.token, 10)
      // Redis ran this consumer's read, then the connection dropped before its reply came back: the
      // entries are pending on the consumer and no round has them. ioredis reconnects ('ready') and
      // resends the read, which finds nothing new.
      const key = t.s.ctx.keys.outbox(t.s.ctx.keys.shardOf(a.account_id))
      await t.s.ctx.redis.xreadgroup('GROUP', 'flusher', flusher.consumer, 'COUNT', 1000, 'STREAMS', key, '>')
      t.s.ctx.redis.emit('ready')
      expect(await flusher.flushOnce()).toBeGreaterThan(0)
      expect(await outboxMoney(t, a.account_id)).toHaveLength(0)
      expect(await pgLedger(t, a.account_id)).toEqual({ count: 11, distinct: 11, sum: 490 })
    } finally {
      await flusher.stop(0)
    }
  })

  test('entries pending on a dead consumer are reclaimed and flushed', async () => {
    const a = await t.signup()
    await calls(a.token, 7)
    const key = t.s.ctx.keys.outbox(t.s.ctx.keys.shardOf(a.account_id))
    await t.s.flusher.ensureGroups()
    await t.s.ctx.redis.xreadgroup('GROUP', 'flusher', 'dead-consumer', 'COUNT', 1000, 'STREAMS', key, '>')
    const survivor = new Flusher(t.s.ctx, t.s.db.db, { batch: 1000, intervalMs: 10, staleMs: 50 })
    await Bun.sleep(120)
    for (let i = 0; i < 20 && (await survivor.flushOnce()) > 0; i++);
    expect(await pgLedger(t, a.account_id)).toEqual({ count: 8, distinct: 8, sum: 493 })
  })

  test('stop() drains the outbox before shutdown', async () => {
    const flusher = new Flusher(t.s.ctx, t.s.db.db, { batch: 5, intervalMs: 1000 })
    const a = await t.signup()
    await calls(a.token, 12)
    flusher.start()
    await flusher.stop(5000)
    expect((await t.s.flusher.lag()).entries).toBe(0)
    expect((await pgLedger(t, a.account_id)).count).toBe(13)
  })
})

function relayUrl(): string {
  const u = new URL(pgUrl(t.db.name))
  u.port = String(pgRelay.port)
  return u.toString()
}
