/**
 * Refunds calls that were cut off: debited, then neither recorded nor refunded by their deadline —
 * the API process died mid-call. Without this the debit would stand with no answer ever given, and
 * the call's Idempotency-Key would stay "in flight" for a day.
 *
 * Every debit puts its call into the shard's in-flight set (debit.lua) and record-calls.lua or
 * refund.lua takes it out, all in the same scripts, so the set is exact. A long proxied stream keeps
 * moving its deadline while it runs (leases.ts); refund.lua re-checks the deadline, so a renewal
 * that lands between this sweep's read and its refund keeps the call alive. Any number of instances may
 * sweep at once: the refund applies at most once per call, and only the sweep whose refund applied
 * files the call and frees its key (a call settled meanwhile is its settle's to file).
 * errors / metrics: `stats()` counts refunded calls; failures are logged and retried next round.
 */
import { SHARDS } from '../redis/keys'
import { filedAs, recordCall } from './calls'
import { parseCallRecord, pick } from './call-record'
import type { RedisContext } from '../redis/context'
import { refund } from './refund'

const BATCH = 100

export class AbandonedCallSweeper {
  private timer: ReturnType<typeof setInterval> | null = null
  private refunded = 0

  constructor(
    private ctx: RedisContext,
    private onError: (e: unknown) => void = () => {},
  ) {}

  start(intervalMs = 10_000): void {
    this.timer ??= setInterval(() => void this.sweepOnce().catch(this.onError), intervalMs)
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
  }

  /** One pass over every shard; returns the calls it refunded. */
  async sweepOnce(): Promise<number> {
    const now = this.ctx.clock.now()
    const counts = await Promise.all(Array.from({ length: SHARDS }, (_, s) => this.sweepShard(s, now)))
    const n = counts.reduce((a, b) => a + b, 0)
    this.refunded += n
    return n
  }

  private async sweepShard(shard: number, now: number): Promise<number> {
    const { redis, keys } = this.ctx
    const due = await redis.zrangebyscore(keys.inflight(shard), '-inf', now, 'LIMIT', 0, BATCH)
    let n = 0
    for (const member of due) {
      // One call that cannot be swept (a damaged record refund.lua refuses) is logged and left, never
      // the end of the pass: it sorts first by deadline, and would hold every later call back.
      try {
        if (await this.sweepCall(shard, member, now)) n++
      } catch (e) {
        this.onError(e)
      }
    }
    return n
  }

  /** Refunds and files one cut-off call; false when it was not refunded here. */
  private async sweepCall(shard: number, member: string, now: number): Promise<boolean> {
    const { redis, keys } = this.ctx
    const [accountId, callId] = member.split('|') as [string, string]
    const [agent, day, target, price, at, idem, model, run] = await readRecord(redis, keys.call(accountId, callId))
    if (day === null) {
      // The call record expired (2 days): nothing left to reverse.
      await redis.zrem(keys.inflight(shard), member)
      return false
    }
    const agentId = agent || null
    const r = await refund(this.ctx, { accountId, agentId, callId, day: Number(day), reason: 'abandoned', dueBy: now, at: at === null ? undefined : Number(at), runId: run || undefined })
    // Its lease was renewed after this sweep read the set: the call is alive, leave it be.
    if (r.notDue) return false
    // Settled since this sweep read the set (by its own request, or by another sweeper): its record
    // and its Idempotency-Key are that settle's to file, with the outcome that stands. Filed here,
    // `abandoned` would take the record's place and free a key whose charge was kept.
    if (!r.applied) return false
    await recordCall(
      this.ctx,
      accountId,
      {
        call_id: callId,
        // Filed as its settle would file it (a metered call under its route, with its model).
        ...filedAs(target ?? '', model ? { model, reserved: Number(price) } : null),
        agent_id: agentId,
        charged: Number(price),
        refunded: true,
        outcome: 'abandoned',
        http_status: null,
        latency_ms: Math.max(0, now - Number(at)),
        at: new Date(Number(at)).toISOString(),
      },
      { idempotencyKey: idem || undefined },
    )
    return true
  }

  stats() {
    return { refunded: this.refunded, running: this.timer !== null }
  }
}

const SWEPT = ['agent', 'day', 'target', 'price', 'at', 'idem', 'model', 'run'] as const

/**
 * A call record's agent, day, target, price, at, idem, model and run (null where it has none): the
 * common call's record is a string, a flat or a metered one (call-record.ts), any other a hash,
 * field by field.
 */
async function readRecord(redis: RedisContext['redis'], key: string): Promise<(string | null)[]> {
  if ((await redis.type(key)) !== 'string') return redis.hmget(key, ...SWEPT)
  const raw = await redis.getBuffer(key)
  // Gone meanwhile, or filed (the bare word `filed`): as an expired record.
  if (!raw) return SWEPT.map(() => null)
  const fields = parseCallRecord(raw)
  if (fields === 'filed') return SWEPT.map(() => null)
  // A string no debit writes is logged and left (sweepShard), as a record refund.lua refuses.
  if (!fields) throw new Error(`sweeper: call record ${key} is damaged`)
  return pick(fields, SWEPT)
}
