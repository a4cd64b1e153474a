/**
 * record-calls.lua claims a call by one HSET of its record (`recorded` and `state` `filed`): the
 * reply of that write tells a first filing from a resent one. A filed call, charged or refunded
 * before, is closed: a late refund and a settle of it move nothing.
 */
import { expect, test } from 'bun:test'
import { runRecordCalls, type RecordCallArgs } from '../../src/lua/record-calls'
import { runRefund } from '../../src/lua/refund'
import { runSettle } from '../../src/lua/settle'
import { scriptRig } from '../helpers/script-rig'

const { redis, keys, ctx } = scriptRig('rcstate')
const ACCT = 'acc_03_rcstate'
const o = { recentCalls: 10, settledTtlS: 300 }

const args = (callId: string, charged: number): RecordCallArgs => ({
  accountId: ACCT, callId, agentId: null, charged, organic: charged > 0,
  recordJson: JSON.stringify({ call_id: callId, account_id: ACCT, charged }), idempotency: null,
})

test('a filed call reads `filed` whichever way it ended, and nothing applies to it after', async () => {
  await redis.hset(keys.account(ACCT), { balance: 100 })
  const day = 20000
  for (const [id, state] of [['c_kept', 'debited'], ['c_refunded', 'refunded']] as const) {
    await redis.hset(keys.call(ACCT, id), { price: 5, agent: '', target: 't', state, day, at: 1, metered: '1', hold: '1', model: 'm', p_in: 1, p_cached: 1, p_out: 1 })
    await redis.expire(keys.call(ACCT, id), 172_800)
  }
  const first = await runRecordCalls(ctx, [args('c_kept', 5), args('c_refunded', 0)], o)
  expect(first).toEqual([{ status: 'ok' }, { status: 'ok' }])
  for (const id of ['c_kept', 'c_refunded']) {
    expect(await redis.hmget(keys.call(ACCT, id), 'state', 'recorded')).toEqual(['filed', '1'])
    expect(await redis.ttl(keys.call(ACCT, id))).toBeLessThanOrEqual(300)
  }
  // Resent: already applied, nothing filed twice.
  expect(await runRecordCalls(ctx, [args('c_kept', 5), args('c_refunded', 0)], o)).toEqual([{ status: 'already_applied' }, { status: 'already_applied' }])
  expect(await redis.llen(keys.recentCalls(ACCT))).toBe(2)
  for (const id of ['c_kept', 'c_refunded']) {
    expect((await runRefund(ctx, { now: 2, accountId: ACCT, agentId: null, callId: id, day, reason: 'timeout', chain: [] })).status).toBe('already_applied')
    expect((await runSettle(ctx, { now: 2, accountId: ACCT, agentId: null, callId: id, day, chain: [], tokens: { input: 1, cached: 0, output: 1 }, source: 'provider' })).status).toBe('already_applied')
  }
  expect(await redis.hget(keys.account(ACCT), 'balance')).toBe('100')
})
