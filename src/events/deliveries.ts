/**
 * The delivery worker: sends due deliveries (a webhook POST or a chat message) and reschedules the
 * failed ones with backoff for a day (backoff.ts).
 *
 * - A batch is claimed in one statement (`FOR UPDATE SKIP LOCKED`), which also pushes the claimed
 *   rows' `next_attempt_at` one lease ahead: several instances share the work without sending a
 *   delivery twice, and a worker that dies mid-send leaves its rows to be retried after the lease.
 * - Due means `next_attempt_at <= now` on the app clock, so tests move the clock instead of waiting.
 * - A webhook goes to the account's endpoint as it is when sent (a fixed URL gets the backlog);
 *   a deleted endpoint or unlinked chat cancels its pending deliveries.
 * errors / metrics: never throws from the loop; `stats()` counts attempts, deliveries, failures.
 */
import { eq, inArray, sql } from 'drizzle-orm'
import type { Clock } from '../clock'
import type { Database } from '../db/client'
import { eventDeliveries, operatorChats, webhookEndpoints } from '../db/schema'
import type { Log } from '../log'
import type { BotApi } from '../telegram/botapi'
import { nextAttemptAt } from './backoff'
import { eventButtons, renderEvent } from './render'
import type { EventType, OwnerEvent } from './types'
import { sendWebhook, type AttemptResult } from './webhook-send'

const BATCH = 50
/** Longer than one attempt can take (the senders time out after 10 s). */
const LEASE_MS = 60_000
const MAX_IDLE_BACKOFF_MS = 10_000

export interface DeliveryDeps {
  db: Database
  clock: Clock
  log: Log
  pollMs: number
  /** null when the deployment has no Telegram bot configured. */
  bot: BotApi | null
  /** WEBHOOKS_ALLOW_INSECURE_LOOPBACK: http://127.0.0.1 endpoints are sent to (tests, local work). */
  allowInsecureLoopback: boolean
}

interface Claimed {
  id: number
  event_id: string
  account_id: string
  channel: string
  target: string
  attempts: number
  created_at: Date
  type: string
  data: unknown
  at: Date
}

type Outcome = AttemptResult | { cancel: string }

export class DeliveryWorker {
  private running = false
  private loop: Promise<void> | null = null
  private wake: (() => void) | null = null
  private counters = { attempts: 0, delivered: 0, failures: 0, gaveUp: 0, lastError: null as string | null }

  constructor(private d: DeliveryDeps) {}

  start(): void {
    if (this.running) return
    this.running = true
    this.loop = this.run()
  }

  async stop(): Promise<void> {
    this.running = false
    this.wake?.()
    await this.loop
  }

  /** Asks a sleeping loop to look now (new deliveries were just scheduled). */
  poke(): void {
    this.wake?.()
  }

  stats() {
    return { ...this.counters, running: this.running }
  }

  private async run(): Promise<void> {
    let idle = this.d.pollMs
    while (this.running) {
      let sent = 0
      try {
        sent = await this.runOnce()
        idle = this.d.pollMs
      } catch (e) {
        this.counters.lastError = e instanceof Error ? e.message : String(e)
        this.d.log.warn('event_delivery_failed', { error: this.counters.lastError })
        idle = Math.min(MAX_IDLE_BACKOFF_MS, idle * 2)
      }
      if (sent === 0 && this.running)
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, idle)
          this.wake = () => {
            clearTimeout(t)
            resolve()
          }
        })
    }
  }

  /** Claims and sends one batch of due deliveries; returns how many were attempted. */
  async runOnce(): Promise<number> {
    const now = this.d.clock.now()
    const rows = await this.claim(now)
    if (rows.length === 0) return 0
    const endpoints = await this.endpoints([...new Set(rows.filter((r) => r.channel === 'webhook').map((r) => r.account_id))])
    const chats = await this.linkedChats(rows.filter((r) => r.channel === 'telegram'))
    await Promise.all(
      rows.map(async (r) => {
        const ev: OwnerEvent = { id: r.event_id, accountId: r.account_id, type: r.type as EventType, at: r.at.getTime(), data: r.data as never }
        let outcome: Outcome
        if (r.channel === 'webhook') {
          const ep = endpoints.get(r.account_id)
          outcome = !ep ? { cancel: 'webhook endpoint removed' } : ep.events && !ep.events.includes(r.type) ? { cancel: 'event type no longer wanted' } : await sendWebhook(ep.url, ep.secret, ev, this.d.allowInsecureLoopback)
        } else if (r.channel === 'telegram') {
          if (!chats.has(`${r.account_id}|${r.target}`)) outcome = { cancel: 'chat unlinked' }
          else if (!this.d.bot) outcome = { ok: false, code: null, error: 'Telegram is not configured on this deployment' }
          else outcome = await this.d.bot.sendMessage(r.target, renderEvent(ev), eventButtons(ev))
        } else outcome = { cancel: `unknown channel ${r.channel}` }
        await this.record(r, outcome)
      }),
    )
    return rows.length
  }

  private async claim(now: number): Promise<Claimed[]> {
    const rows = await this.d.db.execute(sql`
      with due as (
        select id from event_deliveries
         where status = 'pending' and next_attempt_at <= ${new Date(now).toISOString()}
         order by next_attempt_at
         limit ${BATCH}
         for update skip locked
      ), claimed as (
        update event_deliveries d set next_attempt_at = ${new Date(now + LEASE_MS).toISOString()}
          from due where d.id = due.id
        returning d.id, d.event_id, d.account_id, d.channel, d.target, d.attempts, d.created_at
      )
      select c.*, e.type, e.data, e.at from claimed c join events e on e.id = c.event_id`)
    return rowsOf(rows).map((r) => ({
      id: Number(r.id),
      event_id: String(r.event_id),
      account_id: String(r.account_id),
      channel: String(r.channel),
      target: String(r.target),
      attempts: Number(r.attempts),
      created_at: new Date(r.created_at as string),
      type: String(r.type),
      data: typeof r.data === 'string' ? JSON.parse(r.data) : r.data,
      at: new Date(r.at as string),
    }))
  }

  private async endpoints(accounts: string[]): Promise<Map<string, { url: string; secret: string; events: string[] | null }>> {
    if (accounts.length === 0) return new Map()
    const rows = await this.d.db.select().from(webhookEndpoints).where(inArray(webhookEndpoints.accountId, accounts))
    return new Map(rows.map((r) => [r.accountId, { url: r.url, secret: r.secret, events: r.events }]))
  }

  private async linkedChats(rows: Claimed[]): Promise<Set<string>> {
    if (rows.length === 0) return new Set()
    const accounts = [...new Set(rows.map((r) => r.account_id))]
    const found = await this.d.db
      .selectDistinct({ accountId: operatorChats.accountId, chatId: operatorChats.chatId })
      .from(operatorChats)
      .where(inArray(operatorChats.accountId, accounts))
    return new Set(found.map((r) => `${r.accountId}|${r.chatId}`))
  }

  private async record(r: Claimed, o: Outcome): Promise<void> {
    const now = this.d.clock.now()
    const at = new Date(now)
    const row = eq(eventDeliveries.id, r.id)
    if ('cancel' in o) {
      await this.d.db.update(eventDeliveries).set({ status: 'cancelled', lastError: o.cancel }).where(row)
      return
    }
    this.counters.attempts++
    const attempts = r.attempts + 1
    if (o.ok) {
      this.counters.delivered++
      await this.d.db
        .update(eventDeliveries)
        .set({ status: 'delivered', attempts, lastAttemptAt: at, deliveredAt: at, lastResponseCode: o.code, lastError: null })
        .where(row)
      return
    }
    this.counters.failures++
    this.counters.lastError = o.error
    const next = nextAttemptAt(r.created_at.getTime(), attempts, now)
    if (next === null) this.counters.gaveUp++
    await this.d.db
      .update(eventDeliveries)
      .set({ status: next === null ? 'failed' : 'pending', attempts, lastAttemptAt: at, nextAttemptAt: new Date(next ?? now), lastResponseCode: o.code, lastError: o.error })
      .where(row)
  }
}

/** Rows of a raw query: postgres-js answers an array, PGlite `{ rows }`. */
function rowsOf(result: unknown): Record<string, unknown>[] {
  return (Array.isArray(result) ? result : ((result as { rows?: unknown[] }).rows ?? [])) as Record<string, unknown>[]
}
