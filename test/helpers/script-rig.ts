/**
 * Scripts run directly on the shared Redis (no app) under a key prefix of their own, removed after
 * the file: for tests that pin one script's rule with hand-made arguments (test/lua/).
 */
import { afterAll, beforeAll } from 'bun:test'
import Redis from 'ioredis'
import type { RedisContext } from '../../src/redis/context'
import { Keys } from '../../src/redis/keys'
import { loadScripts } from '../../src/redis/scripts'
import { deleteKeys, REDIS_URL } from './harness'
import { startRedisServer, type RedisServer } from './redis-server'

export function scriptRig(name: string): { redis: Redis; keys: Keys; ctx: RedisContext } {
  const prefix = `${name}${Math.random().toString(36).slice(2, 8)}`
  const redis = new Redis(REDIS_URL)
  const keys = new Keys(prefix)
  const ctx = { redis, keys, scripts: loadScripts(redis, { wrappedFrom: 0 }) } as unknown as RedisContext
  afterAll(async () => {
    await deleteKeys(redis, prefix)
    redis.disconnect()
  })
  return { redis, keys, ctx }
}

/**
 * A private redis-server for the file, every script loaded: for tests that compare whole Redis
 * states (a batch against the same calls one at a time). `redis` is set once the server is up.
 */
export function privateScriptServer(extra: Partial<RedisContext> = {}) {
  const rig = { redis: undefined as unknown as Redis, ctxOf: (prefix: string) => ({ redis: rig.redis, keys: new Keys(prefix), scripts, ...extra }) as unknown as RedisContext }
  let server: RedisServer | undefined
  let scripts: ReturnType<typeof loadScripts>
  beforeAll(async () => {
    server = await startRedisServer()
    rig.redis = new Redis(server.url, { enableAutoPipelining: true })
    scripts = loadScripts(rig.redis, { wrappedFrom: 0 })
  })
  afterAll(async () => {
    rig.redis?.disconnect()
    await server?.stop()
  })
  return rig
}
