/**
 * Files finished calls in batches (record-calls-n): every call one shard settles within a turn of
 * the event loop goes to Redis in one script (src/redis/turn-batch.ts), instead of one EVALSHA per
 * call. A call is still filed exactly once and its caller still learns how it went; a call with an
 * Idempotency-Key awaits its filing as before.
 * errors: a failed script rejects every call of its batch (the caller logs it, as it logged one).
 */
import { runRecordCalls, type RecordBatchOptions, type RecordCallArgs, type RecordCallReply } from '../lua/record-calls'
import type { RedisContext } from '../redis/context'
import { TurnBatch } from '../redis/turn-batch'

/** ~10 redis.calls a call: a batch of 32 holds Redis for a few hundred µs at most. */
const MAX_BATCH = 32

export class CallFiling {
  private readonly batch: TurnBatch<RecordCallArgs, RecordCallReply>

  constructor(
    private readonly ctx: RedisContext,
    opts: RecordBatchOptions,
  ) {
    // Grouped by shard: every call of a batch is in its hash slot.
    this.batch = new TurnBatch((_, calls) => runRecordCalls(ctx, ctx.keys.shardOf(calls[0]!.accountId), calls, opts), MAX_BATCH)
  }

  file(args: RecordCallArgs): Promise<RecordCallReply> {
    return this.batch.add(String(this.ctx.keys.shardOf(args.accountId)), args)
  }
}
