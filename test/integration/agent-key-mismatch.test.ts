/**
 * A refund or a settle gives credits back to the agent whose call it was: the call record names the
 * agent, and refund.lua and settle.lua refuse an agent hash that is not that agent's (the app builds
 * the key from the request's principal; the sweeper from the record). Two top-level agents share
 * the empty chain, so the chain check alone cannot tell them apart: given the sibling's key, each
 * script fails, and nothing moves — no balance, no hold, no agent's spend, no record state. A
 * record does not name its account: a refund finds the call in flight under the account it was
 * given (the debit put it there), or fails the same way.
 *
 *   bun test test/integration/agent-key-mismatch.test.ts
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { runRefund } from '../../src/lua/refund'
import { runSettle } from '../../src/lua/settle'
import { startTestApp, type TestApp } from '../helpers/harness'
import { callFields } from '../helpers/ledger'
import { openMeteredCall } from '../helpers/metering'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t?.close()
})

const PRICE = { input: 1000, cachedInput: 100, output: 4000 }

async function siblings() {
  const owner = await t.signup()
  const a = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'a', budget: 400 } })).body
  const b = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'b', budget: 400 } })).body
  const principal = (await t.s.guard.tokens.resolve(a.token))!
  const call = await openMeteredCall(t.s, principal, PRICE)
  return { acct: owner.account_id as string, a: a.id as string, b: b.id as string, call }
}

/** Everything a give-back could move, to compare before and after. */
async function state(acct: string, agents: string[], callId: string) {
  const { redis, keys } = t.s.ctx
  return {
    account: await redis.hmget(keys.account(acct), 'balance', 'held'),
    agents: await Promise.all(agents.map((id) => redis.hmget(keys.agent(acct, id), 'spent_total', 'day_spent'))),
    record: (await callFields(redis, keys.call(acct, callId)))?.state,
  }
}

test("a refund given a sibling agent's key fails and moves nothing", async () => {
  const { acct, a, b, call } = await siblings()
  const before = await state(acct, [a, b], call.callId)
  expect(before.record).toBe('debited')
  const refund = runRefund(t.s.ctx, { now: Date.now(), accountId: acct, agentId: b, callId: call.callId, day: 0, reason: 'test', chain: [] })
  await expect(refund).rejects.toThrow('is not the call')
  expect(await state(acct, [a, b], call.callId)).toEqual(before)
  // The call's own agent gets it back.
  const ok = await runRefund(t.s.ctx, { now: Date.now(), accountId: acct, agentId: a, callId: call.callId, day: 0, reason: 'test', chain: [] })
  expect(ok.status).toBe('ok')
  expect(Number(await t.s.ctx.redis.hget(t.s.ctx.keys.agent(acct, a), 'spent_total'))).toBe(0)
})

test("a settle given a sibling agent's key fails and moves nothing", async () => {
  const { acct, a, b, call } = await siblings()
  const before = await state(acct, [a, b], call.callId)
  const tokens = { input: 10, cached: 0, output: 10 }
  const settle = runSettle(t.s.ctx, { now: Date.now(), accountId: acct, agentId: b, callId: call.callId, day: 0, chain: [], tokens, source: 'provider' })
  await expect(settle).rejects.toThrow('is not the call')
  expect(await state(acct, [a, b], call.callId)).toEqual(before)
  const ok = await runSettle(t.s.ctx, { now: Date.now(), accountId: acct, agentId: a, callId: call.callId, day: 0, chain: [], tokens, source: 'provider' })
  expect(ok.status).toBe('ok')
})

test("a refund of the owner's call given an agent's key fails", async () => {
  const owner = await t.signup()
  const a = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'a', budget: 400 } })).body
  const call = await openMeteredCall(t.s, (await t.s.guard.tokens.resolve(owner.token))!, PRICE)
  const before = await state(owner.account_id, [a.id], call.callId)
  const refund = runRefund(t.s.ctx, { now: Date.now(), accountId: owner.account_id, agentId: a.id, callId: call.callId, day: 0, reason: 'test', chain: [] })
  await expect(refund).rejects.toThrow('is not the call')
  expect(await state(owner.account_id, [a.id], call.callId)).toEqual(before)
})

type Signed = { account_id: string; token: string }
/** Two accounts of one shard: their call keys share a hash slot, so only the in-flight entry tells their calls apart. */
async function sameShard(): Promise<[Signed, Signed]> {
  const byShard = new Map<number, Signed>()
  for (let i = 0; i < 64; i++) {
    const a: Signed = await t.signup()
    const other = byShard.get(t.s.ctx.keys.shardOf(a.account_id))
    if (other) return [other, a]
    byShard.set(t.s.ctx.keys.shardOf(a.account_id), a)
  }
  throw new Error('no two accounts of one shard in 64 signups')
}

test("a refund given another account of the call's shard fails and credits neither", async () => {
  const [x, y] = await sameShard()
  const call = await openMeteredCall(t.s, (await t.s.guard.tokens.resolve(x.token))!, PRICE)
  const read = async () => ({ x: await state(x.account_id, [], call.callId), y: await t.s.ctx.redis.hmget(t.s.ctx.keys.account(y.account_id), 'balance', 'held') })
  const before = await read()
  const refund = runRefund(t.s.ctx, { now: Date.now(), accountId: y.account_id, agentId: null, callId: call.callId, day: 0, reason: 'test', chain: [] })
  await expect(refund).rejects.toThrow('is not in flight')
  expect(await read()).toEqual(before)
  const ok = await runRefund(t.s.ctx, { now: Date.now(), accountId: x.account_id, agentId: null, callId: call.callId, day: 0, reason: 'test', chain: [] })
  expect(ok.status).toBe('ok')
})
