/**
 * The capability spend alarm (docs/api.md §6 Alarms): a capability whose spend over the last hour
 * passes its catalog `spend_alarm` pauses itself. It costs the paid call path nothing: it reads the
 * debit and refund entries the flusher moves anyway (Flusher.observe), keeps per-hour sums per
 * slug in Redis (shared by every instance's flusher), and pauses through the shared pause set.
 *
 * The last hour is estimated as this hour's sum plus the previous hour's weighted by how much of it
 * still lies inside the window (the sliding-window rate limiter's arithmetic). An alarm trips at
 * most once per capability per clock hour, so a founder's resume holds for the rest of that hour.
 * Spend is debits minus refunds, so a failing provider (all refunded) does not trip it.
 * errors / metrics: a trip is logged as `spend_alarm_tripped`.
 */
import type { RedisContext } from '../redis/context'
import type { OutboxEntry } from '../write-behind/outbox'

const HOUR_MS = 3_600_000
/** Hour buckets live long enough to serve as "previous hour" and a little more. */
const BUCKET_TTL_S = 3 * 3600

export interface SpendAlarmTarget {
  /** Credits per hour past which the capability pauses, or undefined when it has no alarm. */
  alarmOf(slug: string): number | undefined
  pause(slug: string): Promise<void>
}

export class SpendAlarm {
  constructor(
    private ctx: RedisContext,
    private target: SpendAlarmTarget,
    private onTrip: (slug: string, spend: number, alarm: number) => void = () => {},
  ) {}

  /** Flusher observer: adds the batch's spend per slug and hour, then checks each touched slug. */
  async observe(entries: OutboxEntry[]): Promise<void> {
    const bySlug = new Map<string, { deltas: Map<number, number>; lastAt: number; alarm: number }>()
    for (const { kind, fields: f } of entries) {
      if (kind !== 'debit' && kind !== 'refund') continue
      const alarm = f.target ? this.target.alarmOf(f.target) : undefined
      if (alarm === undefined) continue
      const spend = -Number(f.amount)
      const at = Number(f.at)
      if (!spend || !Number.isFinite(at)) continue
      const s = bySlug.get(f.target!) ?? { deltas: new Map(), lastAt: 0, alarm }
      const hour = Math.floor(at / HOUR_MS)
      s.deltas.set(hour, (s.deltas.get(hour) ?? 0) + spend)
      s.lastAt = Math.max(s.lastAt, at)
      bySlug.set(f.target!, s)
    }
    await Promise.all([...bySlug].map(([slug, s]) => this.account(slug, s)))
  }

  private async account(slug: string, s: { deltas: Map<number, number>; lastAt: number; alarm: number }): Promise<void> {
    const { redis, keys } = this.ctx
    // Hour keys are in different slots: single-key commands, which ioredis auto-pipelines.
    await Promise.all(
      [...s.deltas].map(([hour, delta]) =>
        Promise.all([redis.hincrby(keys.capabilitySpend(hour), slug, delta), redis.expire(keys.capabilitySpend(hour), BUCKET_TTL_S)]),
      ),
    )
    const hour = Math.floor(s.lastAt / HOUR_MS)
    const [cur, prev] = await Promise.all([redis.hget(keys.capabilitySpend(hour), slug), redis.hget(keys.capabilitySpend(hour - 1), slug)])
    const inWindow = (HOUR_MS - (s.lastAt % HOUR_MS)) / HOUR_MS
    const spend = Number(cur ?? 0) + Math.floor(Number(prev ?? 0) * inWindow)
    if (spend <= s.alarm) return
    const tripped = keys.spendAlarmTripped(hour)
    if ((await redis.hexists(tripped, slug)) === 1) return
    // Pause first: if it fails, the next batch retries the trip. Two flushers racing here both
    // pause, which is idempotent.
    await this.target.pause(slug)
    await Promise.all([redis.hset(tripped, slug, String(s.lastAt)), redis.expire(tripped, BUCKET_TTL_S)])
    this.onTrip(slug, spend, s.alarm)
  }
}
