/**
 * Scripts run directly on the shared Redis (no app) under a key prefix of their own, removed after
 * the file: for tests that pin one script's rule with hand-made arguments (test/lua/).
 */
import { afterAll } from 'bun:test'
import Redis from 'ioredis'
import type { RedisContext } from '../../src/redis/context'
import { Keys } from '../../src/redis/keys'
import { loadScripts } from '../../src/redis/scripts'
import { deleteKeys, REDIS_URL } from './harness'

export function scriptRig(name: string): { redis: Redis; keys: Keys; ctx: RedisContext } {
  const prefix = `${name}${Math.random().toString(36).slice(2, 8)}`
  const redis = new Redis(REDIS_URL)
  const keys = new Keys(prefix)
  const ctx = { redis, keys, scripts: loadScripts(redis) } as unknown as RedisContext
  afterAll(async () => {
    await deleteKeys(redis, prefix)
    redis.disconnect()
  })
  return { redis, keys, ctx }
}
