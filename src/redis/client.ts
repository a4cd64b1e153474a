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
 * a NOSCRIPT is answered by one EVAL that loads the script again (src/redis/variable-keys.ts).
 */
const RESILIENCE = {
  maxRetriesPerRequest: 5,
  retryStrategy: (times: number) => Math.min(times * 100, 1000),
  enableOfflineQueue: true,
}

/** Replies that say a command was not run: its slot is served by another master now, or is moving. */
const NOT_RUN = /^(MOVED|ASK|TRYAGAIN) /
const REDIRECT_TRIES = 16
/** While a slot moves (ASK, TRYAGAIN) the map does not change yet: wait before sending again. */
const MOVING_DELAY_MS = 50

/**
 * A command answered MOVED/ASK/TRYAGAIN inside an auto-pipeline that also carried commands of other
 * slots of that master (a reshard moved one of its slots) is not followed by ioredis: it follows a
 * pipeline's redirection only when every command of it failed alike, so the error reached the caller
 * (a 500) and the slot map stayed stale (test/cluster/reshard.audit.test.ts). Such a command never
 * ran, so it is sent again once the slot map is refreshed (to its new master).
 */
function redirecting<F extends (...a: any[]) => any>(send: F): F {
  return function (this: Cluster, ...args: unknown[]) {
    const first = send.apply(this, args)
    // multi(), pipeline(): no reply to follow; a callback-style call keeps ioredis' own handling.
    if (!(first instanceof Promise) || typeof args.at(-1) === 'function') return first
    const retry = (left: number) => (e: unknown): Promise<unknown> => {
      if (left === 0 || !(e instanceof Error) || !NOT_RUN.test(e.message)) throw e
      const moved = e.message.startsWith('MOVED')
      return new Promise<void>((resolve) => this.refreshSlotsCache(() => (moved ? resolve() : setTimeout(resolve, MOVING_DELAY_MS)))).then(() =>
        (send.apply(this, args) as Promise<unknown>).catch(retry(left - 1)),
      )
    }
    return first.catch(retry(REDIRECT_TRIES))
  } as F
}

// Every builtin command, EVALSHA included (the scripts: src/redis/variable-keys.ts), is redirected.
class RedirectedCluster extends Cluster {}
for (const name of Cluster.prototype.getBuiltinCommands()) {
  const proto = Cluster.prototype as unknown as Record<string, (...a: unknown[]) => unknown>
  if (typeof proto[name] === 'function') (RedirectedCluster.prototype as unknown as Record<string, unknown>)[name] = redirecting(proto[name])
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
    return new RedirectedCluster(nodes, {
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
