/**
 * A script whose number of KEYS varies from call to call (a batch), sent as a plain EVALSHA (EVAL
 * after a NOSCRIPT). ioredis' own script commands cannot carry it: registered without a key count,
 * the count goes first and ioredis' Cluster auto-pipelining takes a command's first argument for its
 * key, so a batch joined the pipeline of whatever node the count's digits hash to and Cluster refused
 * the pipeline ("All keys in the pipeline should belong to the same slots allocation group");
 * registered once per count, a command defined after this turn's pipeline was made is missing from
 * it. EVALSHA is a command ioredis knows the keys of, so it is routed by its first key.
 */
import { createHash } from 'node:crypto'
import type { RedisClient } from './client'

type Reply = (string | number | null)[]

export function variableKeysCaller<R = Reply>(redis: RedisClient, lua: string): (keys: string[], argv: (string | number)[]) => Promise<R> {
  const sha = createHash('sha1').update(lua).digest('hex')
  return async (keys, argv) => {
    try {
      return (await redis.evalsha(sha, keys.length, ...keys, ...argv)) as R
    } catch (e) {
      // Not loaded on that node yet (a fresh or flushed Redis): EVAL loads it as it runs.
      if (!(e instanceof Error) || !e.message.includes('NOSCRIPT')) throw e
      return (await redis.eval(lua, keys.length, ...keys, ...argv)) as R
    }
  }
}
