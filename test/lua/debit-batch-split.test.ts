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
