/**
 * Batched scripts on a real 3-master Redis Cluster: record-calls.lua and settle.lua (a KEYS count that
 * varies per call) and the debit's batches (src/redis/batched-scripts.ts) go to the master of their
 * keys even when the same turn of the event loop sends other commands to the other masters. Sent
 * with the key count first through ioredis' script commands, a batch joined the auto-pipeline of the
 * node the count's digits hash to, and Cluster refused that pipeline: a call was then never filed
 * and its counters never moved (seen failing so, on most runs of this test).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Cluster } from 'ioredis'
import { createRedis } from '../../src/redis/client'
import { loadScripts } from '../../src/redis/scripts'
import { startRedisCluster, type RedisCluster } from './cluster'

let cluster: RedisCluster
let redis: Cluster
beforeAll(async () => {
  cluster = await startRedisCluster(3)
  redis = createRedis({ REDIS_URL: '', REDIS_CLUSTER_NODES: cluster.nodes }) as Cluster
})
afterAll(async () => {
  redis?.disconnect()
  await cluster?.stop()
})

test('a variable-key script and a batch land on their own master beside commands for every other master', async () => {
  expect(redis).toBeInstanceOf(Cluster)
  const scripts = loadScripts(redis, { wrappedFrom: 0 })
  const tags = Array.from({ length: 16 }, (_, i) => `{b:${String(i).padStart(2, '0')}}`)
  for (let round = 0; round < 5; round++) {
    // One turn: for each tag a record-calls.lua batch of one or two calls, and plain commands of every tag.
    const filed = tags.map((tag, i) =>
      scripts.recordCalls(
        [`${tag}:stats`, `${tag}:outbox`, `${tag}:inflight`, ...Array.from({ length: 1 + (i % 2) }, (_, c) => [`${tag}:calls:a`, `${tag}:call:r${round}c${c}`]).flat()],
        [200, 300, 1 + (i % 2), ...Array.from({ length: 1 + (i % 2) }, (_, c) => ['{"call_id":"x"}', `a|r${round}c${c}`, 5]).flat()],
      ),
    )
    const plain = tags.map((tag) => redis.incr(`${tag}:plain`))
    const replies = await Promise.all(filed)
    await Promise.all(plain)
    replies.forEach((r, i) => expect(r).toHaveLength(1 + (i % 2)))
  }
  for (const [i, tag] of tags.entries()) expect(Number(await redis.hget(`${tag}:stats`, 'organic_calls_routed'))).toBe(5 * (1 + (i % 2)))
})
