/**
 * Property: over random sequences of concurrent batches of calls (successes, provider failures,
 * 4xx, unaffordable calls) and repeated refund attempts, after every batch
 *   balance ≥ 0 and balance = Σ credits − Σ debits of the account's entries (Redis),
 * and after a flush Postgres holds every entry exactly once with the same sum.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import { refund } from '../../src/paid-request/refund'
import { startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, flushAll, pgLedger, redisBalance } from '../helpers/ledger'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

type Op = { kind: 'call'; slug: string } | { kind: 'refund-again'; pick: number }

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.constantFrom('test.cheap', 'test.echo', 'test.fail', 'test.bad', 'test.pricey', 'test.free').map((slug) => ({ kind: 'call' as const, slug })),
  fc.nat().map((pick) => ({ kind: 'refund-again' as const, pick })),
)

test('balance = Σ entries after every step, in Redis and after the flush in Postgres', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.array(op, { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 8 }), async (batches) => {
      const a = await t.signup()
      const callIds: string[] = []
      for (const batch of batches) {
        await Promise.all(
          batch.map(async (o) => {
            if (o.kind === 'call') {
              const r = await t.req('POST', `/v1/call/${o.slug}`, { token: a.token, body: {} })
              expect([200, 402, 502]).toContain(r.status)
              if (r.body.call_id) callIds.push(r.body.call_id)
            } else if (callIds.length > 0) {
              // A stray retried refund of any earlier call, racing the calls of its batch: whatever it
              // does, the invariant below must hold.
              const callId = callIds[o.pick % callIds.length]!
              await refund(t.s.ctx, { accountId: a.account_id, agentId: null, callId, day: 0, reason: 'retry' })
            }
          }),
        )
        await checkRedisInvariant(t, a.account_id)
      }
      const entries = await checkRedisInvariant(t, a.account_id)
      await flushAll(t)
      const pg = await pgLedger(t, a.account_id)
      expect(pg.count).toBe(entries.length)
      expect(pg.distinct).toBe(entries.length)
      expect(pg.sum).toBe(await redisBalance(t, a.account_id))
    }),
    { numRuns: 25 },
  )
})
