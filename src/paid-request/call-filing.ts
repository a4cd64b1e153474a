/**
 * Files finished calls in batches (record-calls.lua): every call settled within a turn of the event
 * loop goes to Redis in one script (src/redis/turn-batch.ts, at the size src/redis/scripts.ts
 * declares), instead of one EVALSHA per call. A call is still filed exactly once and its caller still
 * learns how it went; a call with an Idempotency-Key awaits its filing as before.
 * errors: a failed script rejects every call of its batch (the caller logs it, as it logged one).
 */
import { Cluster } from 'ioredis'
import { runRecordCalls, type RecordBatchOptions, type RecordCallArgs, type RecordCallReply } from '../lua/record-calls'
import type { RedisContext } from '../redis/context'
import { scriptBatch } from '../redis/scripts'
import type { TurnBatch } from '../redis/turn-batch'

/**
 * The batch a call joins: on a Cluster its shard's (every key of a script in one hash slot); on a
 * single Redis one for every shard (issue 42: a fleet's turn settles about one call per shard, and a
 * script of one call costs Redis ~94,000 instructions a call against ~59,000 in a batch of 16).
 */
export function filingGroup(ctx: Pick<RedisContext, 'redis' | 'keys'>): (accountId: string) => string {
  if (ctx.redis instanceof Cluster) return (accountId) => String(ctx.keys.shardOf(accountId))
  return () => ''
}

export class CallFiling {
  private readonly batch: TurnBatch<RecordCallArgs, RecordCallReply>
  private readonly groupOf: (accountId: string) => string

  constructor(ctx: RedisContext, opts: RecordBatchOptions) {
    this.groupOf = filingGroup(ctx)
    // runRecordCalls files a batch's calls shard by shard, each group in its shard's keys.
    this.batch = scriptBatch('recordCalls', (_, calls) => runRecordCalls(ctx, calls, opts))
  }

  file(args: RecordCallArgs): Promise<RecordCallReply> {
    return this.batch.add(this.groupOf(args.accountId), args)
  }
}
