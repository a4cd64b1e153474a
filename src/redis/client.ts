import './bun-tracing' // before any command: see the file
import Redis, { Cluster } from 'ioredis'
import type { Config } from '../config'

export type RedisClient = Redis | Cluster

/**
 * Riding out a Redis restart (test/faults/redis-restart.test.ts): while the connection is down,
 * commands wait in the offline queue and are sent once Redis answers again (after loading its AOF:
 * the ready check waits for that). Reconnects back off 100 ms, 200 ms, ... up to 1 s; a command
 * gives up after 5 failed reconnects (about 1.5 s of outage), so a long outage fails requests
 * instead of piling them up. A command whose reply the dropped connection swallowed is resent
 * (ioredis's default): every money script is idempotent by its call id or claim, so a resend
 * never moves money twice (test/faults/script-resend.test.ts). After SCRIPT FLUSH or a restart,
 * `defineCommand` turns NOSCRIPT into one EVAL that loads the script again.
 */
const RESILIENCE = {
  maxRetriesPerRequest: 5,
  retryStrategy: (times: number) => Math.min(times * 100, 1000),
  enableOfflineQueue: true,
}

/**
 * One client per process. Auto-pipelining batches the commands of concurrent requests into one
 * write per event-loop tick, which is most of the throughput of the paid call path.
 */
export function createRedis(cfg: Pick<Config, 'REDIS_URL' | 'REDIS_CLUSTER_NODES'>): RedisClient {
  if (cfg.REDIS_CLUSTER_NODES) {
    const nodes = cfg.REDIS_CLUSTER_NODES.split(',').map((hp) => {
      const [host, port] = hp.split(':')
      return { host: host!, port: Number(port) }
    })
    return new Cluster(nodes, {
      enableAutoPipelining: true,
      // ioredis cannot find the key of XGROUP/XINFO (it follows a subcommand), so it sends them to
      // any node; batched into an auto-pipeline, the MOVED replies are not followed. Sent alone,
      // they are redirected like any other command.
      autoPipeliningIgnoredCommands: ['xgroup', 'xinfo'],
      redisOptions: RESILIENCE,
    })
  }
  return new Redis(cfg.REDIS_URL, { enableAutoPipelining: true, ...RESILIENCE })
}

/** The master nodes to run a command on every shard of the keyspace (cluster) or the one server. */
export function masters(redis: RedisClient): Redis[] {
  return redis instanceof Cluster ? redis.nodes('master') : [redis]
}
