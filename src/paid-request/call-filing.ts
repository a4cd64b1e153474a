/**
 * Files finished calls in batches (record-calls.lua): every call one shard settles within a turn of
 * the event loop goes to Redis in one script (src/redis/turn-batch.ts, at the size
 * src/redis/scripts.ts declares), instead of one EVALSHA per call. A call is still filed exactly once and its caller still learns how it went; a call with an
 * Idempotency-Key awaits its filing as before.
 * errors: a failed script rejects every call of its batch (the caller logs it, as it logged one).
 */
import { runRecordCalls, type RecordBatchOptions, type RecordCallArgs, type RecordCallReply } from '../lua/record-calls'
import type { RedisContext } from '../redis/context'
import { scriptBatch } from '../redis/scripts'
import type { TurnBatch } from '../redis/turn-batch'

export class CallFiling {
  private readonly batch: TurnBatch<RecordCallArgs, RecordCallReply>

  constructor(
    private readonly ctx: RedisContext,
    opts: RecordBatchOptions,
  ) {
    // Grouped by shard: every call of a batch is in its hash slot.
    this.batch = scriptBatch('recordCalls', (_, calls) => runRecordCalls(ctx, ctx.keys.shardOf(calls[0]!.accountId), calls, opts))
  }

  file(args: RecordCallArgs): Promise<RecordCallReply> {
    return this.batch.add(String(this.ctx.keys.shardOf(args.accountId)), args)
  }
}
