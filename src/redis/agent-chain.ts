/**
 * A sub-agent's chain (its ancestor ids, parent first; docs/api.md §8) for the scripts that give
 * spend back along it (refund.lua, settle). The chain never changes once the agent exists, so it
 * is cached in-process: the token resolver fills the cache as it resolves a bearer, which means
 * the refund of a call this instance debited costs no lookup; any other (the sweeper's, another
 * instance's) reads the agent hash once. The scripts check it against the call record anyway.
 */
import type { RedisContext } from './context'

const CACHE_MAX = 100_000
const cache = new Map<string, readonly string[]>()

const keyOf = (ctx: Pick<RedisContext, 'keys'>, acct: string, agentId: string) => ctx.keys.agent(acct, agentId)

export function rememberChain(ctx: Pick<RedisContext, 'keys'>, acct: string, agentId: string, chain: readonly string[]): void {
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!)
  cache.set(keyOf(ctx, acct, agentId), chain)
}

/** The agent's ancestors, parent first; [] for the owner and the operator's own agents. */
export async function chainOf(ctx: Pick<RedisContext, 'keys' | 'redis'>, acct: string, agentId: string | null): Promise<readonly string[]> {
  if (agentId === null) return []
  const hit = cache.get(keyOf(ctx, acct, agentId))
  if (hit) return hit
  const raw = await ctx.redis.hget(ctx.keys.agent(acct, agentId), 'chain')
  const chain = raw ? raw.split(',') : []
  rememberChain(ctx, acct, agentId, chain)
  return chain
}
