/**
 * What debit.lua writes along a sub-agent's chain, and what the walk costs in Redis commands (issue
 * 15's bench target: a depth-4 agent's paid call within 10% of the owner's throughput, where the
 * difference is commands run inside the script). On a private redis-server, so INFO commandstats
 * counts this file's commands only. The HTTP tests (subagents.*, breaker.*, caps.*, metering.*)
 * cover the decisions; this pins the writes and their number.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import Redis from 'ioredis'
import { hashToken } from '../../src/auth/tokens'
import { newAccountId } from '../../src/ledger/accounts'
import { windowsAt } from '../../src/windows'
import { runDebit, type DebitArgs } from '../../src/lua/debit'
import { runRefund } from '../../src/lua/refund'
import type { RedisContext } from '../../src/redis/context'
import { Keys } from '../../src/redis/keys'
import { loadScripts } from '../../src/redis/scripts'
import { startRedisServer, type RedisServer } from '../helpers/redis-server'

let server: RedisServer
let redis: Redis
let ctx: RedisContext
const keys = new Keys(`dchain${Math.random().toString(36).slice(2, 8)}`)
beforeAll(async () => {
  server = await startRedisServer()
  redis = new Redis(server.url)
  ctx = { redis, keys, scripts: loadScripts(redis, { wrappedFrom: 0 }) } as unknown as RedisContext
})
afterAll(async () => {
  redis?.disconnect()
  await server?.stop()
})

const BUDGET = 1_000_000
const NOW = Date.now()

/**
 * An account and a depth-4 chain as create-agent.lua leaves them: ids[0] the top agent, ids[3] the
 * caller; each level's budget carved from its parent. `noBudget` drops one level's budget (the
 * operator removed it): it then holds nothing against its parent.
 */
async function tree(opt: { dailyCap?: number; noBudget?: number } = {}) {
  const acct = newAccountId(null)
  const ids = ['agt_t1', 'agt_t2', 'agt_t3', 'agt_t4']
  await redis.hset(keys.account(acct), { owner: hashToken(`owner-${acct}`), balance: 1_000_000_000 })
  for (let i = 0; i < 4; i++) {
    const budget = BUDGET - i
    const fields: Record<string, string | number> = { token: hashToken(`${ids[i]}-${acct}`), state: 'active', spent_total: 0, depth: i + 1 }
    if (opt.noBudget !== i) fields.budget = budget
    if (i > 0) Object.assign(fields, { parent: ids[i - 1]!, chain: ids.slice(0, i).reverse().join(',') })
    // What its child holds against it (create-agent.lua adds the child's budget).
    if (i < 3 && opt.noBudget !== i + 1) fields.carved = budget - 1
    if (opt.dailyCap) fields.daily_cap = opt.dailyCap
    await redis.hset(keys.agent(acct, ids[i]!), fields)
  }
  return { acct, ids }
}

let seq = 0
function debitArgs(acct: string, ids: string[], who: 'owner' | 'depth4', extra: Partial<DebitArgs> = {}): DebitArgs {
  const w = windowsAt(NOW)
  const agentId = who === 'owner' ? null : ids[3]!
  return {
    now: NOW, accountId: acct, agentId, chain: who === 'owner' ? [] : [ids[2]!, ids[1]!, ids[0]!],
    tokenHash: hashToken(who === 'owner' ? `owner-${acct}` : `${ids[3]}-${acct}`), target: 'test.search', price: 5, unpriced: false,
    callId: `call_dchain_${++seq}`, day: w.day, rateWindow: w.rate, prevRateWindow: w.prevRate, rateLimit: 1_000_000,
    defaultDailyCap: 1_000_000_000, unpricedRequestCap: 1_000, fingerprint: 'fp1', dayKeyTtlS: 172_800,
    breakerCreditsPerMinute: 1_000_000, breakerIdenticalPerMinute: 1_000_000, lowBalanceAlert: 0, abandonAt: NOW + 60_000,
    ...extra,
  }
}

/** Commands run per EVALSHA while `fn` runs, by name (the script's own redis.calls). */
async function commandsOf(fn: () => Promise<void>): Promise<{ total: number; by: Record<string, number> }> {
  await redis.config('RESETSTAT')
  await fn()
  const by: Record<string, number> = {}
  for (const m of (await redis.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) by[m[1]!] = Number(m[2])
  const calls = by.evalsha!
  delete by.evalsha
  delete by['config|resetstat']
  for (const k of Object.keys(by)) by[k] = by[k]! / calls
  return { total: Object.values(by).reduce((a, b) => a + b, 0), by }
}

const windowsFor = (now: number) => ({ rateWindow: windowsAt(now).rate, prevRateWindow: windowsAt(now).prevRate })
const agentField = async (acct: string, id: string, f: string) => Number((await redis.hget(keys.agent(acct, id), f)) ?? 0)

describe('debit.lua along a depth-4 chain', () => {
  test('every level gains the price in spent_total and day spend (its hash\'s day, day_spent); each ancestor\'s carve shrinks by it; the breaker window counts it', async () => {
    const { acct, ids } = await tree()
    const day = windowsAt(NOW).day
    for (let n = 1; n <= 3; n++) {
      const r = await runDebit(ctx, debitArgs(acct, ids, 'depth4'))
      expect(r.status).toBe('ok')
      for (let i = 0; i < 4; i++) {
        expect(await agentField(acct, ids[i]!, 'spent_total')).toBe(5 * n)
        expect(await agentField(acct, ids[i]!, 'day')).toBe(day)
        expect(await agentField(acct, ids[i]!, 'day_spent')).toBe(5 * n)
        if (i < 3) expect(await agentField(acct, ids[i]!, 'carved')).toBe(BUDGET - i - 1 - 5 * n)
      }
      expect(await redis.hget(keys.agent(acct, ids[3]!), 'carved')).toBeNull()
      const brk = keys.breakerWindow(acct, ids[3]!, windowsAt(NOW).rate)
      expect(await redis.hgetall(brk)).toEqual({ credits: String(5 * n), 'f:fp1': String(n) })
      const ttl = await redis.pttl(brk)
      expect(ttl).toBeGreaterThan(0)
      expect(ttl).toBeLessThanOrEqual(120_000)
    }
  })

  test('a level without a budget holds nothing against its parent: the parent\'s carve stays, its spent_total moves', async () => {
    const { acct, ids } = await tree({ noBudget: 2 })
    expect((await runDebit(ctx, debitArgs(acct, ids, 'depth4'))).status).toBe('ok')
    expect(await agentField(acct, ids[1]!, 'carved')).toBe(0) // ids[2] held nothing, and still does
    expect(await agentField(acct, ids[1]!, 'spent_total')).toBe(5)
    expect(await agentField(acct, ids[2]!, 'carved')).toBe(BUDGET - 3 - 5)
    expect(await agentField(acct, ids[0]!, 'carved')).toBe(BUDGET - 1 - 5)
  })

  test('a level whose day spend is of an earlier day starts today from the price; the old day\'s count is gone', async () => {
    const { acct, ids } = await tree()
    const day = windowsAt(NOW).day
    for (const id of ids) await redis.hset(keys.agent(acct, id), { day: day - 1, day_spent: 40 })
    expect((await runDebit(ctx, debitArgs(acct, ids, 'depth4'))).status).toBe('ok')
    for (const id of ids) {
      expect(await agentField(acct, id, 'day')).toBe(day)
      expect(await agentField(acct, id, 'day_spent')).toBe(5)
    }
  })

  test('a refund gives the day spend back only to the levels whose hash still holds the call\'s day', async () => {
    const { acct, ids } = await tree()
    const day = windowsAt(NOW).day
    const chain = [ids[2]!, ids[1]!, ids[0]!]
    const refund = (callId: string, d: number) =>
      runRefund(ctx, { now: NOW, accountId: acct, agentId: ids[3]!, callId, day: d, reason: 'timeout', chain })
    const first = debitArgs(acct, ids, 'depth4')
    const second = debitArgs(acct, ids, 'depth4')
    expect((await runDebit(ctx, first)).status).toBe('ok')
    expect((await runDebit(ctx, second)).status).toBe('ok')
    // Same day: every level's day spend and spent_total go back by the price, each carve grows back.
    expect((await refund(first.callId, day)).status).toBe('ok')
    for (let i = 0; i < 4; i++) {
      expect(await agentField(acct, ids[i]!, 'day_spent')).toBe(5)
      expect(await agentField(acct, ids[i]!, 'spent_total')).toBe(5)
      if (i < 3) expect(await agentField(acct, ids[i]!, 'carved')).toBe(BUDGET - i - 1 - 5)
    }
    // The next HKT day: a debit moves every level's day spend on to it; yesterday's refund then
    // gives back spent_total only.
    const tomorrow = NOW + 86_400_000
    const next = debitArgs(acct, ids, 'depth4', { now: tomorrow, day: day + 1, abandonAt: tomorrow + 60_000 })
    expect((await runDebit(ctx, { ...next, ...windowsFor(tomorrow) })).status).toBe('ok')
    expect((await refund(second.callId, day)).status).toBe('ok')
    for (let i = 0; i < 4; i++) {
      expect(await agentField(acct, ids[i]!, 'spent_total')).toBe(5)
      expect(await agentField(acct, ids[i]!, 'day')).toBe(day + 1)
      expect(await agentField(acct, ids[i]!, 'day_spent')).toBe(5) // tomorrow's, untouched
    }
  })

  test('a depth-4 call costs the owner\'s commands plus one read and one write per level, and three for the breaker', async () => {
    const { acct, ids } = await tree()
    // Past the first call of the day and minute, whose extra EXPIREs are a one-off.
    await runDebit(ctx, debitArgs(acct, ids, 'owner'))
    await runDebit(ctx, debitArgs(acct, ids, 'depth4'))
    const owner = await commandsOf(async () => {
      for (let i = 0; i < 5; i++) expect((await runDebit(ctx, debitArgs(acct, ids, 'owner'))).status).toBe('ok')
    })
    const deep = await commandsOf(async () => {
      for (let i = 0; i < 5; i++) expect((await runDebit(ctx, debitArgs(acct, ids, 'depth4'))).status).toBe('ok')
    })
    // 4 levels × (HMGET, one HSET of spent_total, day, day_spent and an ancestor's carved), and
    // the breaker's two counts of this minute and one HMGET of the previous: 8 + 11 = 19 against
    // the owner's 8 (9 while the resend check was an EXISTS of its own, not a key of the MGET; 10
    // while the call record was a hash and its EXPIRE, not one SET; 12 while the
    // two rate windows and the day spend were three GETs, not one MGET; 18 more, 30, when each
    // level's day spend was a key of its own: an INCRBY per level, a HINCRBY of spent_total and one
    // of each parent's carved; 22 more before that, when the breaker read both minutes field by
    // field, wrote this one's counts after, and re-set its expiry on every call).
    expect(owner.total).toBe(8)
    expect(owner.by.exists ?? 0).toBe(0)
    expect(owner.by.set).toBe(1)
    expect(owner.by.expire ?? 0).toBe(0)
    expect(owner.by.mget).toBe(1)
    expect(owner.by.get ?? 0).toBe(0)
    expect(deep.total - owner.total).toBe(4 * 2 + 3)
    expect(deep.by.incrby).toBe(1) // the account's day spend only
    expect(deep.by.hget ?? 0).toBe(0)
    expect(deep.by.pexpire ?? 0).toBe(0)
  })

  test('a metered call under daily caps reads each level\'s day spend with its hash, the account\'s once', async () => {
    const { acct, ids } = await tree({ dailyCap: 1_000_000 })
    const metered = { model: 'm', inputBound: 100, input: 1_000, cachedInput: 100, output: 4_000, ceiling: null, maxOutput: 1_000, minOutput: 16 }
    await runDebit(ctx, debitArgs(acct, ids, 'depth4', { metered }))
    const deep = await commandsOf(async () => {
      expect((await runDebit(ctx, debitArgs(acct, ids, 'depth4', { metered }))).status).toBe('ok')
    })
    // The rate window's two minutes and the account's day spend, in one MGET (the four levels' come
    // with their HMGET).
    expect(deep.by.mget).toBe(1)
    expect(deep.by.get ?? 0).toBe(0)
  })
})
