/**
 * How a turn's debits go to Redis (src/redis/batched-scripts.ts WRAPPED_FROM):
 * an account with several calls in the turn takes the whole turn through the batch wrapper (the
 * others' calls run in it without the memo); calls each of another account go as plain scripts. Either way each call's reply and what it leaves are those of the same calls one at a time.
 *
 *   bun test test/lua/debit-batch-split.test.ts
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import Redis from 'ioredis'
import { hashToken } from '../../src/auth/tokens'
import { runDebit } from '../../src/lua/debit'
import type { RedisContext } from '../../src/redis/context'
import { Keys } from '../../src/redis/keys'
import { loadScripts } from '../../src/redis/scripts'
import { WRAPPED_FROM } from '../../src/redis/batched-scripts'
import { windowsAt } from '../../src/windows'
import { startRedisServer, type RedisServer } from '../helpers/redis-server'
import { callRecord } from '../helpers/ledger'

let server: RedisServer
let redis: Redis
beforeAll(async () => {
  server = await startRedisServer()
  redis = new Redis(server.url, { enableAutoPipelining: true })
})
afterAll(async () => {
  redis.disconnect()
  await server.stop()
})

const NOW = Date.UTC(2026, 10, 29, 3)
let seq = 0
function argsOf(keys: Keys, accountId: string) {
  const w = windowsAt(NOW)
  return {
    now: NOW, accountId, agentId: null, chain: [], tokenHash: hashToken(`owner-${accountId}`), target: 'bench.search', price: 5, unpriced: false,
    callId: `call_split_${++seq}`, day: w.day, rateWindow: w.rate, prevRateWindow: w.prevRate, rateLimit: 1000, defaultDailyCap: 1e9,
    unpricedRequestCap: 1000, fingerprint: 'fp', dayKeyTtlS: 172_800, breakerCreditsPerMinute: 0, breakerIdenticalPerMinute: 0,
    lowBalanceAlert: 0, abandonAt: NOW + 60_000,
  }
}

/** Scripts Redis ran: EVALSHA and EVAL, less those answered NOSCRIPT (ioredis then sends the EVAL). */
function scriptsRun(stats: string): number {
  let n = 0
  for (const c of ['evalsha', 'eval']) {
    const m = new RegExp(`cmdstat_${c}:calls=(\\d+).*failed_calls=(\\d+)`).exec(stats)
    if (m) n += Number(m[1]) - Number(m[2])
  }
  return n
}

async function fund(keys: Keys, accounts: string[]) {
  for (const a of accounts) await redis.hset(keys.account(a), { owner: hashToken(`owner-${a}`), balance: 12 })
}

test(`a turn of ${WRAPPED_FROM} calls of one account and one call each of two others (two shards): one wrapper, the replies and balances of one at a time`, async () => {
  const accounts = ['acc_03_splitbusy', 'acc_03_splitone', 'acc_05_splittwo']
  // The busy account can pay for two of its calls: the rest are refused, in order.
  const turn = [...Array.from({ length: WRAPPED_FROM }, () => accounts[0]!), accounts[1]!, accounts[2]!]
  const alone = new Keys(`splitA${Date.now()}`)
  const batched = new Keys(`splitB${Date.now()}`)
  await fund(alone, accounts)
  await fund(batched, accounts)
  const scripts = loadScripts(redis)
  const ctxOf = (keys: Keys) => ({ redis, keys, scripts }) as unknown as RedisContext
  const one = []
  for (const a of turn) one.push(await runDebit(ctxOf(alone), argsOf(alone, a)))
  await redis.config('RESETSTAT')
  const together = await Promise.all(turn.map((a) => runDebit(ctxOf(batched), argsOf(batched, a))))
  const stats = await redis.info('commandstats')
  expect(scriptsRun(stats)).toBe(1)
  expect(together.map((r) => r.status)).toEqual(one.map((r) => r.status))
  expect(together.map((r) => r.status)).toEqual(['ok', 'ok', ...Array(WRAPPED_FROM - 2).fill('insufficient_balance'), 'ok', 'ok'])
  for (const a of accounts) expect(await redis.hget(batched.account(a), 'balance')).toBe(await redis.hget(alone.account(a), 'balance'))
})

test('a turn of single calls of different accounts: each as the plain script', async () => {
  const accounts = ['acc_04_splita', 'acc_04_splitb', 'acc_04_splitc']
  const keys = new Keys(`splitC${Date.now()}`)
  await fund(keys, accounts)
  const ctx = { redis, keys, scripts: loadScripts(redis) } as unknown as RedisContext
  await redis.config('RESETSTAT')
  const got = await Promise.all(accounts.map((a) => runDebit(ctx, argsOf(keys, a))))
  expect(got.map((r) => r.status)).toEqual(['ok', 'ok', 'ok'])
  expect(scriptsRun(await redis.info('commandstats'))).toBe(3)
})

test('property: any turn of calls over a few accounts (a busy one taking lone ones along, or all plain) answers and leaves what the calls one at a time do', async () => {
  const accounts = ['acc_01_propa', 'acc_06_propb', 'acc_06_propc', 'acc_11_propd']
  const scripts = loadScripts(redis)
  let run = 0
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.integer({ min: 0, max: accounts.length - 1 }), { minLength: 2, maxLength: 12 }),
      fc.array(fc.integer({ min: 0, max: 40 }), { minLength: accounts.length, maxLength: accounts.length }),
      async (turn, balances) => {
        run++
        const alone = new Keys(`propA${run}${Date.now()}`)
        const batched = new Keys(`propB${run}${Date.now()}`)
        for (const [i, a] of accounts.entries()) {
          await redis.hset(alone.account(a), { owner: hashToken(`owner-${a}`), balance: balances[i]! })
          await redis.hset(batched.account(a), { owner: hashToken(`owner-${a}`), balance: balances[i]! })
        }
        const ctxOf = (keys: Keys) => ({ redis, keys, scripts }) as unknown as RedisContext
        // The same call ids both ways: each call's record and entry compare field for field.
        const args = turn.map((k) => argsOf(alone, accounts[k]!))
        const one = []
        for (const a of args) one.push(await runDebit(ctxOf(alone), a))
        const together = await Promise.all(args.map((a) => runDebit(ctxOf(batched), a)))
        const view = (r: Awaited<ReturnType<typeof runDebit>>) => [r.status, r.status === 'ok' ? r.balance : null]
        expect(together.map(view)).toEqual(one.map(view))
        for (const a of accounts) expect(await redis.hget(batched.account(a), 'balance')).toBe(await redis.hget(alone.account(a), 'balance'))
        for (const a of args) expect(await callRecord(redis, batched.call(a.accountId, a.callId))).toEqual(await callRecord(redis, alone.call(a.accountId, a.callId)))
      },
    ),
    { numRuns: 40 },
  )
})

test('a busy account\'s sub-agent calls (their debits summed per batch) with lone agents of other accounts taken along, one tripping its breaker: the replies and every level as one at a time', async () => {
  // The busy account's calls run with the memo and sum each agent's debits until the batch's end
  // (lua/debit.lua settle_levels); the lone calls run without it, and the breaker's trip of one
  // writes its own hash at once. Neither may touch the other's pending sum.
  const [busy, lone1, lone2] = ['acc_07_splitchain', 'acc_08_splitbrk', 'acc_09_splitlone']
  const seed = async (keys: Keys) => {
    for (const a of [busy, lone1, lone2]) await redis.hset(keys.account(a), { owner: hashToken(`owner-${a}`), balance: 1_000 })
    const agent = (a: string, id: string, h: Record<string, string | number>) =>
      redis.hset(keys.agent(a, id), { token: hashToken(`tok-${id}`), name: id, created: 1, v: 1, state: 'active', spent_total: 0, ...h })
    await agent(busy, 'agt_p', { depth: 1, budget: 100, carved: 40 })
    await agent(busy, 'agt_c', { depth: 2, budget: 40, parent: 'agt_p', chain: 'agt_p' })
    await agent(lone1, 'agt_b', { depth: 1, brk_credits: 3 })
    await agent(lone2, 'agt_l', { depth: 1, budget: 50 })
  }
  const call = (keys: Keys, accountId: string, agentId: string, chain: string[], price: number) => ({
    ...argsOf(keys, accountId), agentId, chain, tokenHash: hashToken(`tok-${agentId}`), price, breakerIdenticalPerMinute: 0,
  })
  const turn: [string, string, string[], number][] = [
    [busy, 'agt_c', ['agt_p'], 7], [lone1, 'agt_b', [], 5], [busy, 'agt_c', ['agt_p'], 9], [busy, 'agt_p', [], 11],
    [lone2, 'agt_l', [], 6], [busy, 'agt_c', ['agt_p'], 30], [busy, 'agt_c', ['agt_p'], 4],
  ]
  const alone = new Keys(`splitD${Date.now()}`)
  const batched = new Keys(`splitE${Date.now()}`)
  await seed(alone)
  await seed(batched)
  const scripts = loadScripts(redis)
  const ctxOf = (keys: Keys) => ({ redis, keys, scripts }) as unknown as RedisContext
  const one = []
  for (const [a, id, chain, price] of turn) one.push(await runDebit(ctxOf(alone), call(alone, a, id, chain, price)))
  await redis.config('RESETSTAT')
  const together = await Promise.all(turn.map(([a, id, chain, price]) => runDebit(ctxOf(batched), call(batched, a, id, chain, price))))
  expect(scriptsRun(await redis.info('commandstats'))).toBe(1)
  expect(together).toEqual(one)
  expect(one.map((r) => r.status)).toEqual(['ok', 'agent_killed', 'ok', 'ok', 'ok', 'agent_budget', 'ok'])
  const levels = (keys: Keys) =>
    Promise.all([[busy, 'agt_p'], [busy, 'agt_c'], [lone1, 'agt_b'], [lone2, 'agt_l']].map(async ([a, id]) => {
      const h = await redis.hgetall(keys.agent(a!, id!))
      return [h.state, h.spent_total, h.day_spent, h.carved, h.kill_reason]
    }))
  expect(await levels(batched)).toEqual(await levels(alone))
  expect((await levels(batched))[1]).toEqual(['active', '20', '20', undefined, undefined])
})
