/**
 * Mirrors the shared set of paused capabilities into the catalog of this instance, so the call
 * path checks a pause without a Redis round trip. A pause made on another instance is seen within
 * REFRESH_MS; one made here at once.
 */
import type { LedgerContext } from '../../ledger/context'
import type { Catalog } from './service'

const REFRESH_MS = 1000

export class PauseWatcher {
  private timer: ReturnType<typeof setInterval> | null = null
  constructor(
    private ctx: LedgerContext,
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

  async pause(slug: string): Promise<void> {
    await this.ctx.redis.sadd(this.ctx.keys.paused(), slug)
    await this.refresh()
  }

  async resume(slug: string): Promise<void> {
    await this.ctx.redis.srem(this.ctx.keys.paused(), slug)
    await this.refresh()
  }
}
