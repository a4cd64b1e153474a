/**
 * A batched script (src/redis/batched-scripts.ts) on a real Redis: the calls of one turn (of one hash
 * slot on a Cluster) go as one EVALSHA of the generated wrapper; each runs the script's body in
 * order, sees the writes of the calls before it, and gets its own reply; an error reply or a failing
 * redis.call rejects its own call only; a call alone in its turn, or calls of different first keys
 * only, run as the plain script.
 *
 *   bun test test/lua/batched-scripts.test.ts
 */
import { afterAll, expect, test } from 'bun:test'
import Redis from 'ioredis'
import { batchedCaller, WRAPPED_FROM } from '../../src/redis/batched-scripts'
import type { RedisClient } from '../../src/redis/client'
import { REDIS_URL } from '../helpers/harness'

const redis = new Redis(REDIS_URL, { enableAutoPipelining: true })
afterAll(() => redis.disconnect())

// ARGV[1]: an amount, or 'error' (an error reply) or 'raise' (a redis.call that fails); ARGV[2]: optional.
const BODY = `
local a = ARGV[1]
if a == 'error' then return redis.error_reply('refused ' .. KEYS[2]) end
if a == 'raise' then redis.call('INCR', KEYS[1], 'too', 'many') end
return {redis.call('INCRBY', KEYS[1], a), ARGV[2] or '', KEYS[2]}
`

/** A caller of BODY counting what it sends; `wrappedFrom` 0 (every batch through the wrapper) unless given. */
function rig(wrappedFrom = 0) {
  const sent = { evalsha: 0, single: 0 }
  const counting = new Proxy(redis, {
    get(target, prop, receiver) {
      if (prop === 'evalsha') return (...a: unknown[]) => (sent.evalsha++, (target.evalsha as (...x: unknown[]) => unknown)(...a))
      return Reflect.get(target, prop, receiver)
    },
  }) as unknown as RedisClient
  const single = (keys: string[], argv: (string | number)[]) => (sent.single++, redis.eval(BODY, keys.length, ...keys, ...argv)) as Promise<(string | number | null)[]>
  return { sent, call: batchedCaller(counting, 'testBody', BODY, 2, single, undefined, wrappedFrom) }
}

test('one turn of one slot is one script; every call answered in order, errors alone', async () => {
  const key = `{batch-${Date.now()}}:n`
  const { sent, call } = rig()
  const argvs: (string | number)[][] = [[1], [2, 'x'], ['error'], [3], ['raise'], [4, 'y']]
  const rs = await Promise.allSettled(argvs.map((argv, i) => call([key, `{batch-${Date.now()}}:k${i}`], argv)))
  expect(sent).toEqual({ evalsha: 1, single: 0 })
  const values = rs.map((r) => (r.status === 'fulfilled' ? r.value.slice(0, 2) : `rejected: ${String((r as PromiseRejectedResult).reason.message)}`))
  expect(values[0]).toEqual([1, ''])
  expect(values[1]).toEqual([3, 'x'])
  expect(values[2]).toMatch(/rejected: .*refused/)
  expect(values[3]).toEqual([6, ''])
  expect(values[4]).toMatch(/rejected: .*[Ww]rong number of args/)
  expect(values[5]).toEqual([10, 'y'])
  expect(Number(await redis.get(key))).toBe(10)
})

test('on one Redis the slots of a turn share its batch (a Cluster keeps them apart: test/cluster/batches.happy.test.ts)', async () => {
  const { sent, call } = rig()
  const t = Date.now()
  const rs = await Promise.all([call([`{a-${t}}:n`, `{a-${t}}:k`], [1]), call([`{b-${t}}:n`, `{b-${t}}:k`], [5]), call([`{a-${t}}:n`, `{a-${t}}:k`], [2])])
  expect(rs.map((r) => r[0])).toEqual([1, 5, 3])
  expect(sent).toEqual({ evalsha: 1, single: 0 })
})

test('the wrapper of every batched script of lua/ loads', async () => {
  const { BATCHED, readScripts } = await import('../../src/redis/scripts')
  const { batchedLua } = await import('../../src/redis/batched-scripts')
  expect(BATCHED.size).toBeGreaterThan(0)
  for (const s of readScripts().filter((s) => BATCHED.has(s.name))) {
    expect(s.numberOfKeys).not.toBeNull()
    expect(await redis.script('LOAD', batchedLua(s.lua, s.numberOfKeys!))).toMatch(/^[0-9a-f]{40}$/)
  }
})

test("a busy key's calls go through the wrapper and take a lone key's call with them; a failed wrapper fails its batch", async () => {
  const t = Date.now()
  const busy = `{split-${t}}:busy`
  const lone = `{split-${t}}:lone`
  const sent = { evalsha: 0, single: 0 }
  let down = false
  const counting = new Proxy(redis, {
    get(target, prop, receiver) {
      if (prop === 'evalsha')
        return (...a: unknown[]) => {
          sent.evalsha++
          // The wrapper's script lost (a connection error, say): every call of its batch fails with it.
          return down ? Promise.reject(new Error('connection lost')) : (target.evalsha as (...x: unknown[]) => unknown)(...a)
        }
      return Reflect.get(target, prop, receiver)
    },
  }) as unknown as RedisClient
  const single = (keys: string[], argv: (string | number)[]) => (sent.single++, redis.eval(BODY, keys.length, ...keys, ...argv)) as Promise<(string | number | null)[]>
  const call = batchedCaller(counting, 'testBody', BODY, 2, single, undefined, 3)
  const turn = () => [call([busy, `${busy}k`], [1]), call([lone, `${lone}k`], [5]), call([busy, `${busy}k`], [1]), call([busy, `${busy}k`], [1])]
  expect((await Promise.all(turn())).map((r) => r[0])).toEqual([1, 5, 2, 3])
  expect(sent).toEqual({ evalsha: 1, single: 0 })
  down = true
  const rs = await Promise.allSettled(turn())
  expect(rs.map((r) => (r.status === 'fulfilled' ? r.value[0] : (r.reason as Error).message))).toEqual(Array(4).fill('connection lost'))
  expect(Number(await redis.get(busy))).toBe(3)
  expect(Number(await redis.get(lone))).toBe(5)
})

test('calls of different keys go as plain scripts, however many in a turn', async () => {
  const { sent, call } = rig(WRAPPED_FROM)
  const t = Date.now()
  const rs = await Promise.all(Array.from({ length: 12 }, (_, i) => call([`{d${i}-${t}}:n`, `{d${i}-${t}}:k`], [i + 1])))
  expect(rs.map((r) => r[0])).toEqual(Array.from({ length: 12 }, (_, i) => i + 1))
  expect(sent).toEqual({ evalsha: 0, single: 12 })
})

// A memo body that defers field ARGV[1] of hash KEYS[1] to ARGV[2] (a number when it is one): the
// wrapper writes each hash's deferred fields after the last call, however many they are.
const DEFER = `
local hash_memo = nil --@batch-memo
local hash_dirty = nil --@batch-dirty
--@batch-per-call
local d = hash_dirty[KEYS[1]]
if not d then
  d = {}
  hash_dirty[KEYS[1]] = d
end
d[ARGV[1]] = tonumber(ARGV[2]) or ARGV[2]
return 1
`

test("a hash's deferred fields, one to six of them, numbers formatted as integers, are written whole", async () => {
  const tag = `{defer-${Date.now()}}`
  const single = (keys: string[], argv: (string | number)[]) => redis.eval(DEFER, keys.length, ...keys, ...argv) as Promise<(string | number | null)[]>
  const call = batchedCaller(redis as unknown as RedisClient, 'testDefer', DEFER, 1, single, undefined, 0)
  const calls: Promise<unknown>[] = []
  const want: Record<string, Record<string, string>> = {}
  for (let n = 1; n <= 6; n++) {
    const key = `${tag}:h${n}`
    want[key] = {}
    for (let j = 1; j <= n; j++) {
      const v = j % 2 === 1 ? String(1e15 + j) : `s${j}`
      want[key]![`f${j}`] = v
      calls.push(call([key], [`f${j}`, v]))
    }
  }
  await Promise.all(calls)
  for (const [key, fields] of Object.entries(want)) expect(await redis.hgetall(key)).toEqual(fields)
})
