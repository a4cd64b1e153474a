/**
 * Referral farming: the +500 is earned by the referred account's first successful call, which may
 * cost next to nothing, so one referrer could sign up accounts by the hundred. A referrer earns at
 * most REFERRAL_BONUS_PER_DAY bonuses per HKT day (the referred side still gets its own), and no
 * bonus lifts a balance past its cap. What is not credited is on the ledger entry, with the reason,
 * in Redis and in Postgres.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { ledgerEntries } from '../../src/db/schema'
import { startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, flushAll, pgLedger, redisBalance } from '../helpers/ledger'

let t: TestApp
let capped: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { REFERRAL_BONUS_PER_DAY: '2' } })
  capped = await startTestApp({ env: { DEFAULT_BALANCE_CAP: '800' } })
})
afterAll(async () => {
  await t.close()
  await capped.close()
})

async function referralRows(app: TestApp, acct: string) {
  await flushAll(app)
  return app.s.db.db
    .select({ amount: ledgerEntries.amount, uncredited: ledgerEntries.uncredited, reason: ledgerEntries.uncreditedReason })
    .from(ledgerEntries)
    .where(and(eq(ledgerEntries.accountId, acct), eq(ledgerEntries.kind, 'referral')))
    .orderBy(ledgerEntries.streamId)
}

async function firstCall(app: TestApp, referrerRef: string) {
  const referred = await app.signup(undefined, { referred_by: referrerRef })
  const r = await app.req('POST', '/v1/call/test.echo', { token: referred.token, body: {} })
  expect(r.status).toBe(200)
  return referred
}

describe('referral bonus limits', () => {
  test('a referrer earns at most REFERRAL_BONUS_PER_DAY bonuses per HKT day; the referred side still gets its own', async () => {
    const referrer = await t.signup()
    const referred = [await firstCall(t, referrer.public_ref), await firstCall(t, referrer.public_ref), await firstCall(t, referrer.public_ref)]
    expect(await redisBalance(t, referrer.account_id)).toBe(500 + 2 * 500)
    for (const r of referred) expect(await redisBalance(t, r.account_id)).toBe(500 - 5 + 500)
    await checkRedisInvariant(t, referrer.account_id)

    // A new HKT day: the referrer earns again.
    t.clock.advance(24 * 3600 * 1000)
    await firstCall(t, referrer.public_ref)
    expect(await redisBalance(t, referrer.account_id)).toBe(500 + 3 * 500)

    const rows = await referralRows(t, referrer.account_id)
    expect(rows).toEqual([
      { amount: 500, uncredited: null, reason: null },
      { amount: 500, uncredited: null, reason: null },
      { amount: 0, uncredited: 500, reason: 'referrer_daily_limit' },
      { amount: 500, uncredited: null, reason: null },
    ].map((r) => expect.objectContaining(r)))
    const pg = await pgLedger(t, referrer.account_id)
    expect(pg.sum).toBe(await redisBalance(t, referrer.account_id))
  })

  test('the bonus stops at the balance cap on either side; the entry says how much was not credited', async () => {
    const referrer = await capped.signup()
    const referred = await firstCall(capped, referrer.public_ref)
    expect(await redisBalance(capped, referrer.account_id)).toBe(800)
    expect(await redisBalance(capped, referred.account_id)).toBe(800)
    await checkRedisInvariant(capped, referrer.account_id)
    await checkRedisInvariant(capped, referred.account_id)
    expect(await referralRows(capped, referrer.account_id)).toEqual([expect.objectContaining({ amount: 300, uncredited: 200, reason: 'balance_cap' })])
    expect(await referralRows(capped, referred.account_id)).toEqual([expect.objectContaining({ amount: 305, uncredited: 195, reason: 'balance_cap' })])
    expect((await pgLedger(capped, referred.account_id)).sum).toBe(800)
  })
})
