/**
 * A flat call's common record is one string, state|price|day|at|agent|chain|brk|target, written with
 * its TTL by one SET (lua/debit.lua), where a metered call's, one with an Idempotency-Key, and one
 * written before the string keep the hash, field by field. Every reader takes both: the debit's own
 * answer to a resent script, refund.lua, record-calls.lua's claim, and the sweeper
 * (test/integration/sweeper.test.ts refunds real flat calls through it).
 */
import { describe, expect, test } from 'bun:test'
import { hashToken } from '../../src/auth/tokens'
import { runDebit, type DebitArgs } from '../../src/lua/debit'
import { runRecordCalls } from '../../src/lua/record-calls'
import { runRefund } from '../../src/lua/refund'
import { windowsAt } from '../../src/windows'
import { parseOutboxEntry } from '../../src/write-behind/outbox'
import { scriptRig } from '../helpers/script-rig'

const { redis, keys, ctx } = scriptRig('crecord')
const NOW = Date.UTC(2026, 10, 25, 12, 0, 30)
const TARGET = 'proxy:odd|target|é'

async function account(acct: string, agent: string | null): Promise<void> {
  await redis.hset(keys.account(acct), { owner: hashToken(`owner-${acct}`), balance: 1000 })
  if (agent) await redis.hset(keys.agent(acct, agent), { token: hashToken(`tok-${agent}`), name: 'w', created: 1, v: 1, state: 'active', spent_total: 0, depth: 1 })
}

function debitArgs(acct: string, agent: string | null, callId: string, price: number): DebitArgs {
  const w = windowsAt(NOW)
  return {
    now: NOW, accountId: acct, agentId: agent, tokenHash: hashToken(agent ? `tok-${agent}` : `owner-${acct}`), target: TARGET, price, unpriced: false,
    callId, day: w.day, rateWindow: w.rate, prevRateWindow: w.prevRate, rateLimit: 100, defaultDailyCap: 1_000_000,
    unpricedRequestCap: 100, dayKeyTtlS: 172_800, breakerCreditsPerMinute: 0, breakerIdenticalPerMinute: 0, lowBalanceAlert: 0, abandonAt: NOW + 60_000,
  }
}

async function refundEntry(acct: string, callId: string) {
  const entries = await redis.xrange(keys.outbox(keys.shardOf(acct)), '-', '+')
  return entries.flatMap(([id, f]) => parseOutboxEntry(id, f)).find((e) => e.fields.id === `${callId}:refund`)
}

describe("a flat call's record", () => {
  test('is one string with its TTL; a resent debit answers the price it holds, and debits nothing more', async () => {
    for (const [agent, price] of [[null, 7], ['agt_r1', 3]] as const) {
      const acct = `acc_07_crec${price}`
      await account(acct, agent)
      const args = debitArgs(acct, agent, `call_${acct}`, price)
      expect(await runDebit(ctx, args)).toMatchObject({ status: 'ok', balance: 1000 - price, price })
      expect(await redis.get(keys.call(acct, args.callId))).toBe(`debited|${price}|${args.day}|${NOW}|${agent ?? ''}|||${TARGET}`)
      expect(await redis.ttl(keys.call(acct, args.callId))).toBeGreaterThan(172_000)
      expect(await runDebit(ctx, args)).toMatchObject({ status: 'ok', balance: 1000 - price, price })
      expect(await redis.hget(keys.account(acct), 'balance')).toBe(String(1000 - price))
    }
  })

  test('a resent debit whose record is not a flat string (a metered string, an Idempotency-Key or an unpriced route hash) answers what it holds, and debits nothing more', async () => {
    const metered = { model: 'm', inputBound: 100, input: 1_000, cachedInput: 100, output: 4_000, ceiling: 200, maxOutput: 1_000, minOutput: 16 }
    const shapes: [string, Partial<DebitArgs>, string][] = [
      ['metered', { metered }, 'string'],
      ['idem', { idempotency: { key: 'k1', fingerprint: 'fp1' } }, 'hash'],
      ['unpriced', { unpriced: true, price: 0 }, 'hash'],
    ]
    for (const [name, extra, type] of shapes) {
      const acct = `acc_07_crehash_${name}`
      await account(acct, null)
      const args = { ...debitArgs(acct, null, `call_${acct}`, 6), ...extra }
      const first = await runDebit(ctx, args)
      if (first.status !== 'ok') throw new Error(`${name}: ${first.status}`)
      expect(await redis.type(keys.call(acct, args.callId))).toBe(type)
      const balance = await redis.hget(keys.account(acct), 'balance')
      expect(await runDebit(ctx, args)).toEqual({ ...first, refillDue: false })
      expect(await redis.hget(keys.account(acct), 'balance')).toBe(balance)
    }
  })

  test('refund.lua gives back what the string names, its entry naming the target; a record field by field the same', async () => {
    const w = windowsAt(NOW)
    for (const shape of ['string', 'fields'] as const) {
      const acct = `acc_07_crefund_${shape}`
      const callId = `call_${acct}`
      await account(acct, 'agt_r2')
      expect((await runDebit(ctx, debitArgs(acct, 'agt_r2', callId, 9))).status).toBe('ok')
      if (shape === 'fields') {
        await redis.del(keys.call(acct, callId))
        await redis.hset(keys.call(acct, callId), { price: 9, agent: 'agt_r2', target: TARGET, state: 'debited', day: w.day, at: NOW })
      }
      expect(await runRefund(ctx, { now: NOW + 1000, accountId: acct, agentId: 'agt_r2', callId, day: w.day, reason: 'provider_error', chain: [], at: NOW })).toEqual({
        status: 'ok',
        balance: 1000,
        amount: 9,
      })
      expect(await redis.get(keys.spentToday(acct, w.day))).toBe('0')
      expect(await redis.hmget(keys.agent(acct, 'agt_r2'), 'spent_total', 'day_spent')).toEqual(['0', '0'])
      expect((await refundEntry(acct, callId))?.fields).toMatchObject({ kind: 'refund', agent: 'agt_r2', amount: '9', target: TARGET, ref: `${callId}:debit` })
      expect(await runRefund(ctx, { now: NOW + 2000, accountId: acct, agentId: 'agt_r2', callId, day: w.day, reason: 'provider_error', chain: [], at: NOW })).toEqual({
        status: 'already_applied',
        balance: 1000,
      })
    }
  })

  test('record-calls.lua files it once: the bare word `filed`, its TTL the short one; a later refund gives nothing back', async () => {
    const acct = 'acc_07_cfile'
    const callId = `call_${acct}`
    await account(acct, null)
    expect((await runDebit(ctx, debitArgs(acct, null, callId, 4))).status).toBe('ok')
    const rec = { call_id: callId, slug: 'x', agent_id: null, charged: 4, refunded: false, outcome: 'ok', http_status: 200, latency_ms: 1, at: new Date(NOW).toISOString(), account_id: acct }
    const filing = { accountId: acct, callId, agentId: null, recordJson: JSON.stringify(rec), charged: 4, organic: true, idempotency: null }
    expect(await runRecordCalls(ctx, [filing, filing], { recentCalls: 200, settledTtlS: 300 })).toEqual([{ status: 'ok' }, { status: 'already_applied' }])
    expect(await runRecordCalls(ctx, [filing], { recentCalls: 200, settledTtlS: 300 })).toEqual([{ status: 'already_applied' }])
    expect(await redis.get(keys.call(acct, callId))).toBe('filed')
    expect(await redis.ttl(keys.call(acct, callId))).toBeLessThanOrEqual(300)
    expect(await redis.zscore(keys.inflight(keys.shardOf(acct)), `${acct}|${callId}`)).toBeNull()
    expect(await redis.lrange(keys.recentCalls(acct), 0, -1)).toHaveLength(1)
    const w = windowsAt(NOW)
    expect(await runRefund(ctx, { now: NOW + 1000, accountId: acct, agentId: null, callId, day: w.day, reason: 'provider_error', chain: [], at: NOW })).toEqual({ status: 'already_applied', balance: 996 })
  })
})
