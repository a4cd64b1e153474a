/**
 * Files finished calls in batches (record-calls-n): every call one shard settles within a turn of
 * the event loop goes to Redis in one script, instead of one EVALSHA per call — one command for
 * ioredis to build, write and parse, and one script start in Redis, shared by all of them (issue 17).
 * A call is still filed exactly once and its caller still learns how it went; a call with an
 * Idempotency-Key awaits its filing as before. Batches are capped, so one script never holds Redis'
 * single thread for long.
 * errors: a failed script rejects every call of its batch (the caller logs it, as it logged one).
 */
import { runRecordCalls, type RecordBatchOptions, type RecordCallArgs, type RecordCallReply } from '../lua/record-calls'
import type { RedisContext } from '../redis/context'
import type { Shard } from '../redis/keys'

/** ~10 redis.calls a call: a batch of 32 holds Redis for a few hundred µs at most. */
const MAX_BATCH = 32

interface Waiting {
  args: RecordCallArgs
  resolve: (r: RecordCallReply) => void
  reject: (e: unknown) => void
}

export class CallFiling {
  private readonly queues = new Map<Shard, Waiting[]>()
  private scheduled = false

  constructor(
    private readonly ctx: RedisContext,
    private readonly opts: RecordBatchOptions,
  ) {}

  file(args: RecordCallArgs): Promise<RecordCallReply> {
    return new Promise((resolve, reject) => {
      const shard = this.ctx.keys.shardOf(args.accountId)
      let queue = this.queues.get(shard)
      if (!queue) this.queues.set(shard, (queue = []))
      queue.push({ args, resolve, reject })
      if (queue.length >= MAX_BATCH) this.send(shard)
      else if (!this.scheduled) {
        this.scheduled = true
        // After this turn's I/O callbacks: the calls settled alongside this one join its batch.
        setImmediate(() => {
          this.scheduled = false
          for (const shard of [...this.queues.keys()]) this.send(shard)
        })
      }
    })
  }

  private send(shard: Shard): void {
    const batch = this.queues.get(shard)
    if (!batch?.length) return
    this.queues.delete(shard)
    runRecordCalls(
      this.ctx,
      shard,
      batch.map((w) => w.args),
      this.opts,
    ).then(
      (replies) => batch.forEach((w, i) => w.resolve(replies[i]!)),
      (e: unknown) => batch.forEach((w) => w.reject(e)),
    )
  }
}
