/**
 * Fault: a money script reaches Redis twice. ioredis resends the commands whose replies a dropped
 * connection swallowed (autoResendUnfulfilledCommands), so after a Redis restart the same script
 * with the same call id can run again. Every money script must then change nothing the second
 * time. Here each script is deliberately run twice per call, through the HTTP paths.
 *
 *   bun test test/faults/script-resend.test.ts
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { ScriptName } from '../../src/redis/scripts'
import { startTestApp, type TestApp } from '../helpers/harness'
import { assertLedger } from '../helpers/invariants'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t?.close()
})

/** Runs the script twice with the same keys and arguments; the caller sees the second reply. */
function twice(name: ScriptName): () => void {
  const original = t.s.ctx.scripts[name]
  t.s.ctx.scripts[name] = async (keys, argv) => {
    await original(keys, argv)
    return original(keys, argv)
  }
  return () => {
    t.s.ctx.scripts[name] = original
  }
}

describe('a money script resent after a lost reply applies once', () => {
  test('debit', async () => {
    const a = await t.signup()
    const restore = twice('debit')
    const rs = await Promise.all(Array.from({ length: 10 }, () => t.req('POST', '/v1/call/test.echo', { token: a.token, body: {} })))
    restore()
    expect(rs.map((r) => r.status)).toEqual(Array(10).fill(200))
    await assertLedger(t.s, [{ account: a.account_id, balance: 450 }], { debits: rs.map((r) => r.body.call_id) })
  })

  test('refund', async () => {
    const a = await t.signup()
    const restore = twice('refund')
    const r = await t.req('POST', '/v1/call/test.fail', { token: a.token, body: {} })
    restore()
    expect(r.body).toMatchObject({ error: 'PROVIDER_ERROR', refunded: true, balance: 500 })
    await assertLedger(t.s, [{ account: a.account_id, balance: 500 }], { refunded: [r.body.call_id] })
  })

  test('account creation: the signup answers 201 and one account exists', async () => {
    const restore = twice('createAccount')
    const r = await t.req('POST', '/v1/signup', { body: { email: `resend-${t.prefix}@example.com` } })
    restore()
    expect(r.status).toBe(201)
    expect(r.body.balance).toBe(500)
    expect((await t.req('GET', '/v1/balance', { token: r.body.token })).body.balance).toBe(500)
    await assertLedger(t.s, [{ account: r.body.account_id, balance: 500 }])
  })

  test('call record: public counters and activity count the call once', async () => {
    const a = await t.signup()
    const before = (await t.req('GET', '/v1/public-stats')).body
    const restore = twice('recordCalls')
    await t.req('POST', '/v1/call/test.echo', { token: a.token, body: {} })
    await Bun.sleep(20)
    restore()
    const after = (await t.req('GET', '/v1/public-stats')).body
    expect(after.organic_calls_routed - before.organic_calls_routed).toBe(1)
    expect((await t.req('GET', '/v1/activity', { token: a.token })).body.calls).toHaveLength(1)
  })

  test('referral bonus', async () => {
    const referrer = await t.signup()
    const referred = await t.signup(undefined, { referred_by: referrer.public_ref })
    const restore = twice('referralBonus')
    const r = await t.req('POST', '/v1/call/test.echo', { token: referred.token, body: {} })
    restore()
    // The resend finds the bonus claimed and answers ALREADY_APPLIED, so this one answer shows the
    // balance before the bonus; the ledger below is what must be exact.
    expect(r.status).toBe(200)
    await assertLedger(t.s, [
      { account: referred.account_id, balance: 995 },
      { account: referrer.account_id, balance: 1000 },
    ])
  })
})
