/**
 * What a batched script's call receives (src/redis/batched-scripts.ts): a batch sends each call only
 * where it differs from the call before, and each distinct key and argument once; every call must
 * still get exactly its own KEYS and ARGV, as the plain script would, whatever it does to them. A
 * body's part above `--@batch-per-call` is made once per batch; the debit's glob budget
 * (lua/lib/allowlist.lua) stays each call's own.
 *
 *   bun test test/lua/batched-args.property.test.ts
 */
import { afterAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import Redis from 'ioredis'
import { hashToken } from '../../src/auth/tokens'
import { runDebit, type DebitArgs } from '../../src/lua/debit'
import { batchedCaller } from '../../src/redis/batched-scripts'
import type { RedisClient } from '../../src/redis/client'
import type { RedisContext } from '../../src/redis/context'
import { Keys } from '../../src/redis/keys'
import { loadScripts } from '../../src/redis/scripts'
import { windowsAt } from '../../src/windows'
import { REDIS_URL } from '../helpers/harness'

const redis = new Redis(REDIS_URL, { enableAutoPipelining: true })
afterAll(() => redis.disconnect())

type Reply = (string | number | null)[]

/** Counts the batches sent (EVALSHA of a wrapper); the plain script goes through `single`. */
function counting() {
  const sent = { evalsha: 0 }
  const client = new Proxy(redis, {
    get(target, prop, receiver) {
      if (prop === 'evalsha') return (...a: unknown[]) => (sent.evalsha++, (target.evalsha as (...x: unknown[]) => unknown)(...a))
      return Reflect.get(target, prop, receiver)
    },
  }) as unknown as RedisClient
  return { sent, client }
}

// Echoes its KEYS and ARGV, then spoils both: a later call of the batch must not see it.
const ECHO = `
local out = {#KEYS, #ARGV}
for i = 1, #KEYS do out[#out + 1] = KEYS[i] end
for i = 1, #ARGV do out[#out + 1] = ARGV[i] end
KEYS[1], ARGV[1], ARGV[#ARGV + 2] = 'spoiled', 'spoiled', 'spoiled'
return out
`
const PER_CALL = 3

test('every call of a batch gets exactly its own KEYS and ARGV, as the plain script does', async () => {
  const tag = `{args-${Date.now()}}`
  const key = fc.constantFrom('a', 'b', 'c', 'd').map((k) => `${tag}:${k}`)
  // Numbers and their spelling as strings, '' and separators a layout uses: values are never parsed.
  const value = fc.oneof(fc.constantFrom('', 'x', '0', '12', '1=2', '3 4', ',', 'spoiled'), fc.integer({ min: -3, max: 20 }), fc.constantFrom(1e12, 12))
  const call = fc.record({ keys: fc.array(key, { minLength: PER_CALL, maxLength: PER_CALL }), argv: fc.array(value, { maxLength: 7 }) })
  const plain = (keys: string[], argv: (string | number)[]) => redis.eval(ECHO, keys.length, ...keys, ...argv) as Promise<Reply>
  await fc.assert(
    fc.asyncProperty(fc.array(call, { minLength: 2, maxLength: 12 }), async (calls) => {
      const { sent, client } = counting()
      const batched = batchedCaller(client, 'echo', ECHO, PER_CALL, plain, undefined, 0)
      const got = await Promise.all(calls.map((c) => batched(c.keys, c.argv)))
      expect(sent.evalsha).toBe(1)
      const want = await Promise.all(calls.map((c) => plain(c.keys, c.argv)))
      expect(got).toEqual(want)
      // The reference itself: what was passed, numbers as their strings.
      expect(want).toEqual(calls.map((c) => [PER_CALL, c.argv.length, ...c.keys, ...c.argv.map(String)]))
    }),
    { numRuns: 150 },
  )
})

// Echoes its KEYS and ARGV and writes neither: the calls share the wrapper's tables.
const ECHO_READ_ONLY = `--@batch-args-read-only
local out = {#KEYS, #ARGV}
for i = 1, #KEYS do out[#out + 1] = KEYS[i] end
for i = 1, #ARGV do out[#out + 1] = ARGV[i] end
return out
`

test('a body that never writes its KEYS and ARGV gets exactly its own through the shared tables (fewer ARGV than the call before)', async () => {
  const tag = `{ro-${Date.now()}}`
  const key = fc.constantFrom('a', 'b', 'c').map((k) => `${tag}:${k}`)
  const value = fc.oneof(fc.constantFrom('', 'x', '0', '12', '1=2', '3 4'), fc.integer({ min: -3, max: 20 }))
  const call = fc.record({ keys: fc.array(key, { minLength: PER_CALL, maxLength: PER_CALL }), argv: fc.array(value, { maxLength: 7 }) })
  const plain = (keys: string[], argv: (string | number)[]) => redis.eval(ECHO_READ_ONLY, keys.length, ...keys, ...argv) as Promise<Reply>
  await fc.assert(
    fc.asyncProperty(fc.array(call, { minLength: 2, maxLength: 12 }), async (calls) => {
      const { sent, client } = counting()
      const batched = batchedCaller(client, 'echo-ro', ECHO_READ_ONLY, PER_CALL, plain, undefined, 0)
      const got = await Promise.all(calls.map((c) => batched(c.keys, c.argv)))
      expect(sent.evalsha).toBe(1)
      expect(got).toEqual(calls.map((c) => [PER_CALL, c.argv.length, ...c.keys, ...c.argv.map(String)]))
    }),
    { numRuns: 150 },
  )
})

test("a body's part above --@batch-per-call is made once per batch, the rest once per call", async () => {
  const body = `
local made = {batch = 0, calls = 0}
made.batch = made.batch + 1
--@batch-per-call
made.calls = made.calls + 1
return {made.batch, made.calls, ARGV[1]}
`
  const { sent, client } = counting()
  const plain = (keys: string[], argv: (string | number)[]) => redis.eval(body, keys.length, ...keys, ...argv) as Promise<Reply>
  const call = batchedCaller(client, 'marked', body, 1, plain, undefined, 0)
  const key = `{marked-${Date.now()}}:k`
  const got = await Promise.all(['p', 'q', 'r'].map((a) => call([key], [a])))
  expect(sent.evalsha).toBe(1)
  // One batch: the part above ran once, and what it made is the calls' own to share.
  expect(got).toEqual([
    [1, 1, 'p'],
    [1, 2, 'q'],
    [1, 3, 'r'],
  ])
  expect(await plain([key], ['alone'])).toEqual([1, 1, 'alone'])
})

test("each debit of a batch has its own glob budget: one call's walks never refuse the next", async () => {
  const keys = new Keys(`globs${Date.now().toString(36)}`)
  const { sent, client } = counting()
  const ctx = { redis: client, keys, scripts: loadScripts(client, { wrappedFrom: 0 }) } as unknown as RedisContext
  const acct = 'acc_07_globbudget'
  const target = 'a'.repeat(300)
  // Three globs that never match, ~20,000 walk steps each against the target, then one that does:
  // a call spends ~60% of its 100,000 steps, so a second call on the first one's rest is refused.
  const costly = `*${'a'.repeat(100)}b`
  const allow = [costly, costly, costly, '*a'].join('\n')
  await redis.hset(keys.account(acct), { owner: hashToken('owner'), balance: 1000 })
  await redis.hset(keys.agent(acct, 'agt_globs'), { token: hashToken('agt_globs'), name: 'g', state: 'active', created: 1, v: 1, depth: 1, spent_total: 0, allow })
  const now = Date.now()
  const w = windowsAt(now)
  let seq = 0
  const args = (): DebitArgs => ({
    now, accountId: acct, agentId: 'agt_globs', chain: [], tokenHash: hashToken('agt_globs'), target, price: 1, unpriced: false,
    callId: `call_globs_${++seq}`, day: w.day, rateWindow: w.rate, prevRateWindow: w.prevRate, rateLimit: 1e6, defaultDailyCap: 1e6,
    unpricedRequestCap: 1e6, dayKeyTtlS: 172_800, breakerCreditsPerMinute: 0, breakerIdenticalPerMinute: 0, lowBalanceAlert: 0, abandonAt: now + 60_000,
  })
  const alone = await runDebit(ctx, args())
  expect(alone.status).toBe('ok')
  // Alone, the plain script (an EVALSHA of its own: its unused trailing key slots left out).
  expect(sent.evalsha).toBe(1)
  const batch = await Promise.all([args(), args(), args()].map((a) => runDebit(ctx, a)))
  expect(sent.evalsha).toBe(2)
  expect(batch.map((r) => r.status)).toEqual(['ok', 'ok', 'ok'])
  expect(await redis.hget(keys.account(acct), 'balance')).toBe('996')
})

test('a debit sent alone leaves out its unused trailing key slots and arguments, and answers as with them all', async () => {
  const keys = new Keys(`trim${Date.now().toString(36)}`)
  const counts: number[][] = []
  const client = new Proxy(redis, {
    get(target, prop, receiver) {
      // EVALSHA sha numkeys ...keys ...argv: the key count and the argument count of each call.
      if (prop === 'evalsha') return (...a: unknown[]) => (counts.push([Number(a[1]), a.length - 2 - Number(a[1])]), (target.evalsha as (...x: unknown[]) => unknown)(...a))
      return Reflect.get(target, prop, receiver)
    },
  }) as unknown as RedisClient
  const ctx = { redis: client, keys, scripts: loadScripts(client) } as unknown as RedisContext
  const acct = 'acc_07_trimmedslots'
  await redis.hset(keys.account(acct), { owner: hashToken('owner'), balance: 1000 })
  await redis.hset(keys.agent(acct, 'agt_trim'), { token: hashToken('agt_trim'), name: 't', state: 'active', created: 1, v: 1, depth: 1, spent_total: 0 })
  const now = Date.now()
  const w = windowsAt(now)
  let seq = 0
  const args = (agentId: string | null, more: Partial<DebitArgs> = {}): DebitArgs => ({
    now, accountId: acct, agentId, chain: [], tokenHash: hashToken(agentId ?? 'owner'), target: 'x.y', price: 5, unpriced: false,
    callId: `call_trim_${++seq}`, day: w.day, rateWindow: w.rate, prevRateWindow: w.prevRate, rateLimit: 1e6, defaultDailyCap: 1e6,
    unpricedRequestCap: 3, dayKeyTtlS: 172_800, breakerCreditsPerMinute: 1e6, breakerIdenticalPerMinute: 1e6, lowBalanceAlert: 0, abandonAt: now + 60_000, ...more,
  })
  // One at a time: each goes alone, as the plain script.
  expect((await runDebit(ctx, args(null))).status).toBe('ok')
  expect((await runDebit(ctx, args('agt_trim'))).status).toBe('ok')
  const keyed = args(null, { idempotency: { key: 'k-1', fingerprint: 'fp-1' } })
  expect((await runDebit(ctx, keyed)).status).toBe('ok')
  // An unpriced route's cap still reaches the script: the fourth request of a cap of 3 is refused.
  for (let i = 0; i < 3; i++) expect((await runDebit(ctx, args(null, { unpriced: true, price: 0 }))).status).toBe('ok')
  expect((await runDebit(ctx, args(null, { unpriced: true, price: 0 }))).status).toBe('request_cap')
  expect(counts.slice(0, 3)).toEqual([
    [9, 13], // the owner: no key, no breaker, no chain, no run
    [12, 16], // an agent: its breaker windows and their defaults
    [10, 19], // the owner with an Idempotency-Key: its record at KEYS[10], the key at ARGV[18..19]
  ])
  expect(counts[3]).toEqual([9, 17])
  expect(await redis.hget(keys.idempotency(acct, null, 'k-1'), 'fp')).toBe('fp-1')
  expect(await redis.hget(keys.account(acct), 'balance')).toBe(String(1000 - 15))
})
