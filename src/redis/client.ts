import Redis, { Cluster } from 'ioredis'
import type { Config } from '../config'

export type RedisClient = Redis | Cluster

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
      redisOptions: { maxRetriesPerRequest: 3 },
    })
  }
  return new Redis(cfg.REDIS_URL, { enableAutoPipelining: true, maxRetriesPerRequest: 3 })
}

/** The master nodes to run a command on every shard of the keyspace (cluster) or the one server. */
export function masters(redis: RedisClient): Redis[] {
  return redis instanceof Cluster ? redis.nodes('master') : [redis]
}
