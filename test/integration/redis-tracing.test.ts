/**
 * ioredis skips its per-command diagnostics_channel tracing only when the channel reports no
 * subscribers; under Bun that needs src/redis/bun-tracing.ts. Without it every command pays for a
 * trace context nobody reads; with it, a real subscriber still receives its traces.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import dc from 'node:diagnostics_channel'
import { createRedis } from '../../src/redis/client'
import { REDIS_URL } from '../helpers/harness'

const redis = createRedis({ REDIS_URL, REDIS_CLUSTER_NODES: undefined })
afterAll(() => redis.disconnect())

describe('ioredis tracing under Bun', () => {
  test('the command channel reports no subscribers, so ioredis does not trace', () => {
    expect((dc.tracingChannel('ioredis:command') as unknown as { hasSubscribers: boolean }).hasSubscribers).toBe(false)
  })

  test('a subscriber still receives every command', async () => {
    const seen: string[] = []
    const ch = dc.tracingChannel('ioredis:command')
    const handlers = { start: (m: unknown) => void seen.push((m as { command: string }).command) }
    ch.subscribe(handlers as never)
    try {
      expect((ch as unknown as { hasSubscribers: boolean }).hasSubscribers).toBe(true)
      await redis.ping()
      expect(seen).toContain('ping')
    } finally {
      ch.unsubscribe(handlers as never)
    }
    expect((ch as unknown as { hasSubscribers: boolean }).hasSubscribers).toBe(false)
  })
})
