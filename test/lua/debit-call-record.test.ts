/**
 * A flat call's record packs its fixed part into one field, `v` = price|day|at|agent|target
 * (lua/debit.lua), where a metered call's, and one written before `v`, keeps them field by field.
 * Every reader takes both: the debit's own answer to a resent script, refund.lua, and the sweeper
 * (test/integration/sweeper.test.ts refunds real flat calls through it).
 */
import { describe, expect, test } from 'bun:test'
import { hashToken } from '../../src/auth/tokens'
import { runDebit, type DebitArgs } from '../../src/lua/debit'
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
  test('is `v` and `state`; a resent debit answers the price it packed, and debits nothing more', async () => {
    for (const [agent, price] of [[null, 7], ['agt_r1', 3]] as const) {
      const acct = `acc_07_crec${price}`
      await account(acct, agent)
      const args = debitArgs(acct, agent, `call_${acct}`, price)
      expect(await runDebit(ctx, args)).toMatchObject({ status: 'ok', balance: 1000 - price, price })
      expect(await redis.hgetall(keys.call(acct, args.callId))).toEqual({ v: `${price}|${args.day}|${NOW}|${agent ?? ''}|${TARGET}`, state: 'debited' })
      expect(await runDebit(ctx, args)).toMatchObject({ status: 'ok', balance: 1000 - price, price })
      expect(await redis.hget(keys.account(acct), 'balance')).toBe(String(1000 - price))
    }
  })

  test('refund.lua gives back what `v` names, its entry naming the target; a record field by field the same', async () => {
    const w = windowsAt(NOW)
    for (const shape of ['packed', 'fields'] as const) {
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
})
