/**
 * emitEvent(): the TypeScript way to raise an owner event, for state changes made outside Lua.
 * It appends an `event` entry to the account's shard outbox (the stream the flusher already
 * drains, acking only after Postgres committed), so from this call on the event cannot be lost.
 * A Lua script raises the same entry itself (see src/events/types.ts for its fields), which is
 * better still: then the event and its state change are one atomic write.
 * errors: none of its own; a Redis failure rejects.
 */
import { randomId } from '../auth/tokens'
import type { RedisContext } from '../redis/context'
import type { EventData, EventType } from './types'

export interface EmitOptions {
  /** A fixed id makes a retried emit idempotent (e.g. `evt_<charge id>_refill`); default random. */
  id?: string
  /** Epoch ms; default the app clock's now. */
  at?: number
}

export async function emitEvent<T extends EventType>(
  ctx: Pick<RedisContext, 'redis' | 'keys' | 'clock'>,
  accountId: string,
  type: T,
  data: EventData[T],
  opt: EmitOptions = {},
): Promise<string> {
  const id = opt.id ?? `evt_${randomId()}`
  const at = opt.at ?? ctx.clock.now()
  await ctx.redis.xadd(ctx.keys.outbox(ctx.keys.shardOf(accountId)), '*', 'kind', 'event', 'id', id, 'acct', accountId, 'type', type, 'at', String(at), 'data', JSON.stringify(data))
  return id
}
