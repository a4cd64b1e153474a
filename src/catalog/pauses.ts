/**
 * Mirrors the shared set of paused capabilities into the catalog of this instance, so the call
 * path checks a pause without a Redis round trip. A pause made on another instance is seen within
 * REFRESH_MS; one made here at once.
 */
import type { RedisContext } from '../redis/context'
import type { Catalog } from './catalog'

const REFRESH_MS = 1000

export type PauseReason = 'founder' | 'spend_alarm'

export class PauseWatcher {
  private timer: ReturnType<typeof setInterval> | null = null
  /** Told once per pause that changed something (owners hear of it as `capability.paused`). */
  onPaused: ((slug: string, reason: PauseReason) => Promise<void>) | null = null
  constructor(
    private ctx: RedisContext,
    private catalog: Catalog,
  ) {}

  async refresh(): Promise<void> {
    this.catalog.setPaused(await this.ctx.redis.smembers(this.ctx.keys.paused()))
  }

  start(): void {
    this.timer ??= setInterval(() => void this.refresh().catch(() => {}), REFRESH_MS)
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
  }

  async pause(slug: string, reason: PauseReason = 'founder'): Promise<void> {
    const added = await this.ctx.redis.sadd(this.ctx.keys.paused(), slug)
    await this.refresh()
    if (added === 1) await this.onPaused?.(slug, reason)
  }

  async resume(slug: string): Promise<void> {
    await this.ctx.redis.srem(this.ctx.keys.paused(), slug)
    await this.refresh()
  }
}
