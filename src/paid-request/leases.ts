/**
 * Keeps long calls out of the abandoned-call sweeper's reach while the process serving them lives.
 *
 * A debit enters the shard's in-flight set with a deadline (debit.lua); past it, the sweeper takes
 * the call for one cut off by a crash and refunds it. A proxied stream has no natural end (an LLM
 * may stream for an hour), so instead of one long deadline it gets a short lease that this holder
 * renews while the stream runs: a live stream is never refunded, and a stream whose process died
 * is refunded one lease after its last renewal, not half an hour later.
 *
 * A renewal only moves a deadline later (ZADD XX GT) and only for a call still in the set, so it
 * can never resurrect a call that was recorded or refunded meanwhile; and the sweeper's refund
 * re-checks the deadline inside refund.lua, so a renewal racing a sweep wins. A renewal that fails
 * (Redis briefly down) is retried on the next round; a lease spans several rounds.
 */
import type { RedisContext } from '../redis/context'

export interface LeaseOptions {
  /** How far past "now" each renewal moves the deadline. @default 10 minutes */
  leaseMs?: number
  /** How often every held lease is renewed (one pipelined batch). @default a quarter of the lease */
  renewEveryMs?: number
  /**
   * A call held longer than this stops being renewed, and the sweeper refunds it one lease later: a
   * safety net should a request path ever fail to release its lease, well inside the call record's
   * two days. @default 24 hours
   */
  maxHoldMs?: number
}

export class InFlightLeases {
  readonly leaseMs: number
  private readonly renewEveryMs: number
  private readonly maxHoldMs: number
  /** `<account>|<call>` → the account (for the shard's key) and when the hold began. */
  private readonly held = new Map<string, { accountId: string; since: number }>()
  private timer: ReturnType<typeof setInterval> | null = null

  constructor(
    private ctx: RedisContext,
    opt: LeaseOptions = {},
    private onError: (e: unknown) => void = () => {},
  ) {
    this.leaseMs = opt.leaseMs ?? 10 * 60_000
    this.renewEveryMs = opt.renewEveryMs ?? Math.floor(this.leaseMs / 4)
    this.maxHoldMs = opt.maxHoldMs ?? 24 * 3600_000
  }

  /** Renews the call's lease until the returned release is called (idempotent). */
  hold(accountId: string, callId: string): () => void {
    const member = `${accountId}|${callId}`
    this.held.set(member, { accountId, since: this.ctx.clock.now() })
    this.timer ??= setInterval(() => void this.renewOnce().catch(this.onError), this.renewEveryMs)
    return () => {
      this.held.delete(member)
      if (this.held.size === 0) this.stop()
    }
  }

  /** One renewal round over every held lease; returns how many deadlines moved. */
  async renewOnce(): Promise<number> {
    if (this.held.size === 0) return 0
    const { redis, keys, clock } = this.ctx
    const now = clock.now()
    const deadline = now + this.leaseMs
    const renewals: Promise<number>[] = []
    for (const [member, { accountId, since }] of this.held) {
      if (now - since > this.maxHoldMs) this.held.delete(member)
      else renewals.push(redis.zadd(keys.inflight(keys.shardOf(accountId)), 'XX', 'GT', 'CH', deadline, member))
    }
    const moved = await Promise.all(renewals)
    return moved.reduce<number>((a, b) => a + Number(b), 0)
  }

  get size(): number {
    return this.held.size
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
  }
}
