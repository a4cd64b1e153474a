/**
 * The scripts are called by SHA without registering them as ioredis commands: ioredis copies every
 * registered command onto each auto-pipeline it makes (one per turn of the event loop), which cost
 * the service ~9% of its CPU under load with 32 scripts (bench/RESULTS.md, issue 42). After a
 * SCRIPT FLUSH the calls still work: test/faults/redis-restart.test.ts.
 */
import { afterAll, expect, test } from 'bun:test'
import Redis from 'ioredis'
import { loadScripts } from '../../src/redis/scripts'
import { REDIS_URL } from '../helpers/harness'

const redis = new Redis(REDIS_URL, { enableAutoPipelining: true })
afterAll(() => redis.disconnect())

test('loading the scripts registers no command on the client, so an auto-pipeline copies none', () => {
  loadScripts(redis)
  expect(Object.keys((redis as unknown as { scriptsSet: object }).scriptsSet)).toEqual([])
})

test('a fixed-key script runs by SHA, the calls of one turn together, and refuses a wrong key count', async () => {
  const scripts = loadScripts(redis)
  const tag = `{t:${crypto.randomUUID()}}`
  const keys = [`${tag}:rl:now`, `${tag}:rl:prev`]
  // rate-limit.lua, 2 requests a minute: the third of one turn is refused.
  const replies = await Promise.all([0, 1, 2].map(() => scripts.rateLimit(keys, [Date.now(), 2])))
  expect(replies.map((r) => r[0])).toEqual([0, 0, replies[2]![0]])
  expect(replies[2]![0]).not.toBe(0)
  expect(() => scripts.rateLimit([keys[0]!], [Date.now(), 2])).toThrow(/1 keys given/)
  await redis.del(...keys)
})
