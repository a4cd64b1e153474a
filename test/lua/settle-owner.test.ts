/**
 * settle.lua reads fewer fields of an owner's call record (its agent key the `_owner` one): the
 * record must then name no agent, or the release would skip the agent's windows. Such a settle is
 * refused alone, nothing of it written; an owner's call settles as before.
 */
import { expect, test } from 'bun:test'
import { runRecordCalls } from '../../src/lua/record-calls'
import { runSettle } from '../../src/lua/settle'
import { scriptRig } from '../helpers/script-rig'

const { redis, keys, ctx } = scriptRig('stlowner')
const ACCT = 'acc_05_stlowner'
const day = 20000

async function debited(callId: string, agent: string) {
  await redis.hset(keys.call(ACCT, callId), { price: 50, agent, target: 'proxy:llm/m1', state: 'debited', day, at: 1, metered: '1', hold: '1', model: 'm1', p_in: 1000, p_cached: 100, p_out: 7000 })
}

test('an agent\'s call settled as the owner\'s is refused alone; the owner\'s settles', async () => {
  await redis.hset(keys.account(ACCT), { balance: 900, held: 100 })
  await debited('c_agent', 'agt_x')
  await debited('c_owner', '')
  const base = { now: 2, accountId: ACCT, agentId: null, day, chain: [], tokens: { input: 100, cached: 0, output: 200 }, source: 'provider' as const }
  const [bad, good] = await Promise.allSettled([runSettle(ctx, { ...base, callId: 'c_agent' }), runSettle(ctx, { ...base, callId: 'c_owner' })])
  expect(bad.status).toBe('rejected')
  expect(String((bad as PromiseRejectedResult).reason)).toContain('not the owner')
  expect(await redis.hget(keys.call(ACCT, 'c_agent'), 'state')).toBe('debited')
  expect(good.status).toBe('fulfilled')
  expect((good as PromiseFulfilledResult<{ status: string; charged: number }>).value).toMatchObject({ status: 'ok', charged: 1 })
  expect(await redis.hmget(keys.account(ACCT), 'balance', 'held')).toEqual(['949', '50'])
})

test('a flat call (its record a string) settled by mistake answers not_found alone; the batch\'s metered call settles', async () => {
  const acct = 'acc_05_stlflat'
  await redis.hset(keys.account(acct), { balance: 900, held: 50 })
  await redis.hset(keys.call(acct, 'c_metered'), { price: 50, agent: '', target: 'proxy:llm/m1', state: 'debited', day, at: 1, metered: '1', hold: '1', model: 'm1', p_in: 1000, p_cached: 100, p_out: 7000 })
  const flat = `debited|5|${day}|1||||a.b`
  await redis.set(keys.call(acct, 'c_flat'), flat, 'EX', 600)
  const base = { now: 2, accountId: acct, agentId: null, day, chain: [], tokens: { input: 100, cached: 0, output: 200 }, source: 'provider' as const }
  const [f, m] = await Promise.all([runSettle(ctx, { ...base, callId: 'c_flat' }), runSettle(ctx, { ...base, callId: 'c_metered' })])
  expect(f).toEqual({ status: 'not_found' })
  expect(m).toMatchObject({ status: 'ok', charged: 1 })
  expect(await redis.get(keys.call(acct, 'c_flat'))).toBe(flat)
})

test('a filed call\'s record is the bare word `filed` with the short TTL: a settle sent again answers already_applied with the balance, a filing sent again changes nothing', async () => {
  const acct = 'acc_05_stlfiled'
  await redis.hset(keys.account(acct), { balance: 900, held: 50 })
  await redis.hset(keys.call(acct, 'c_filed'), { price: 50, agent: '', target: 'proxy:llm/m1', state: 'debited', day, at: 1, metered: '1', hold: '1', model: 'm1', p_in: 1000, p_cached: 100, p_out: 7000 })
  await redis.expire(keys.call(acct, 'c_filed'), 172_800)
  const file = { recordHead: '{"call_id":"c_filed"', organic: true, recentCalls: 10, settledTtlS: 300 }
  const args = { now: 2, accountId: acct, agentId: null, callId: 'c_filed', day, chain: [], tokens: { input: 100, cached: 0, output: 200 }, source: 'provider' as const, file }
  expect(await runSettle(ctx, args)).toMatchObject({ status: 'ok', balance: 949, charged: 1 })
  expect(await redis.get(keys.call(acct, 'c_filed'))).toBe('filed')
  expect(await redis.ttl(keys.call(acct, 'c_filed'))).toBeLessThanOrEqual(300)
  // Twice in one batch and once more alone: the first settles, the others find it filed.
  const [again, twice] = await Promise.all([runSettle(ctx, args), runSettle(ctx, args)])
  expect(again).toEqual({ status: 'already_applied', balance: 949 })
  expect(twice).toEqual({ status: 'already_applied', balance: 949 })
  expect(await runSettle(ctx, { ...args, file: undefined })).toEqual({ status: 'already_applied', balance: 949 })
  expect(await redis.lrange(keys.recentCalls(acct), 0, -1)).toEqual(['{"call_id":"c_filed","charged":1,"uncharged":0}'])
  expect(await runRecordCalls(ctx, [{ accountId: acct, callId: 'c_filed', agentId: null, recordJson: '{"call_id":"c_filed","charged":1}', charged: 1, organic: true, idempotency: null }], { recentCalls: 10, settledTtlS: 300 })).toEqual([{ status: 'already_applied' }])
  expect(await redis.hmget(keys.account(acct), 'balance', 'held')).toEqual(['949', '0'])
  expect(await redis.llen(keys.recentCalls(acct))).toBe(1)
})
