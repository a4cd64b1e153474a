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
import { Keys } from '../../src/redis/keys'
import type { RedisContext } from '../../src/redis/context'
import { CallFiling, filingGroup } from '../../src/paid-request/call-filing'
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
        [200, 300, 1, 1 + (i % 2), ...Array.from({ length: 1 + (i % 2) }, (_, c) => ['{"call_id":"x"}', `a|r${round}c${c}`, 5]).flat()],
      ),
    )
    const plain = tags.map((tag) => redis.incr(`${tag}:plain`))
    const replies = await Promise.all(filed)
    await Promise.all(plain)
    replies.forEach((r, i) => expect(r).toHaveLength(1 + (i % 2)))
  }
  for (const [i, tag] of tags.entries()) expect(Number(await redis.hget(`${tag}:stats`, 'organic_calls_routed'))).toBe(5 * (1 + (i % 2)))
})

test('the call filing batches by shard on a Cluster: a turn\'s calls of 16 shards each filed in its own slot', async () => {
  const keys = new Keys('cf')
  const ctx = { redis, keys, scripts: loadScripts(redis), clock: { now: () => Date.now() } } as unknown as RedisContext
  expect(filingGroup(ctx)('acc_03_x')).not.toBe(filingGroup(ctx)('acc_12_x'))
  const filing = new CallFiling(ctx, { recentCalls: 10, settledTtlS: 300 })
  const accounts = Array.from({ length: 16 }, (_, s) => `acc_${String(s).padStart(2, '0')}_cf`)
  // Two calls of each shard in one turn: a script of two calls per shard, none across slots.
  const replies = await Promise.all(accounts.flatMap((a) => [1, 2].map((c) => filing.file({ accountId: a, callId: `c${c}`, agentId: null, recordJson: JSON.stringify({ call_id: `c${c}` }), charged: 5, organic: true, idempotency: null }))))
  expect(replies).toEqual(accounts.flatMap(() => [{ status: 'ok' }, { status: 'ok' }]))
  for (const [s, a] of accounts.entries()) {
    expect(await redis.hget(keys.stats(s), 'organic_calls_routed')).toBe('2')
    expect(await redis.llen(keys.recentCalls(a))).toBe(2)
    expect(await redis.xlen(keys.outbox(s))).toBe(1)
  }
})
