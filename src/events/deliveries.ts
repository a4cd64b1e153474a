/**
 * The delivery worker: sends due deliveries (a webhook POST or a chat message) and reschedules the
 * failed ones with backoff for a day (backoff.ts).
 *
 * - A batch is claimed in one statement (`FOR UPDATE SKIP LOCKED`), which also pushes the claimed
 *   rows' `next_attempt_at` one lease ahead: several instances share the work without sending a
 *   delivery twice, and a worker that dies mid-send leaves its rows to be retried after the lease.
 * - Due means `next_attempt_at <= now` on the app clock, so tests move the clock instead of waiting.
 * - Sends run on their own: the loop claims more while they are in flight and never waits for the
 *   slowest, so one owner's endpoint that hangs until the send timeout holds nobody else's
 *   deliveries. In flight at once (per instance): at most MAX_IN_FLIGHT, and at most PER_TARGET to
 *   one target (an account's webhook endpoint, or one chat). A claim skips targets already at
 *   their bound, and rows it claimed past a target's bound are put back as they were (due, in
 *   order) for a later claim.
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
import { rowsOf } from '../db/rows'

const BATCH = 50
/** Sends in flight at once, per instance, and to one target (an endpoint, a chat). */
const MAX_IN_FLIGHT = 128
const PER_TARGET = 4
/** Longer than one attempt can take (the senders time out after 10 s, DNS look-up included). */
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
  /** next_attempt_at before the claim leased it: a row put back unsent gets it again. */
  was: Date
  type: string
  data: unknown
  at: Date
}

/** Whom a delivery goes to: the unit of PER_TARGET. */
const targetOf = (r: { account_id: string; channel: string; target: string }) => `${r.account_id}|${r.channel}|${r.target}`

type Outcome = AttemptResult | { cancel: string }

export class DeliveryWorker {
  private running = false
  private loop: Promise<void> | null = null
  private wake: (() => void) | null = null
  /** Poked since the loop last looked: it looks again before sleeping. */
  private poked = false
  private counters = { attempts: 0, delivered: 0, failures: 0, gaveUp: 0, lastError: null as string | null }
  /** Sends in flight: per target, and their promises (idle(), stop()). */
  private perTarget = new Map<string, number>()
  private sending = new Set<Promise<void>>()

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
    await this.idle()
  }

  /** Resolves when no send is in flight (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.sending.size > 0) await Promise.allSettled([...this.sending])
  }

  /** Asks the loop to look now (new deliveries were just scheduled, or a send freed its place). */
  poke(): void {
    this.poked = true
    this.wake?.()
  }

  stats() {
    return { ...this.counters, inFlight: this.sending.size, running: this.running }
  }

  private async run(): Promise<void> {
    let idle = this.d.pollMs
    while (this.running) {
      let sent = 0
      this.poked = false
      try {
        sent = await this.runOnce()
        idle = this.d.pollMs
      } catch (e) {
        this.counters.lastError = e instanceof Error ? e.message : String(e)
        this.d.log.warn('event_delivery_failed', { error: this.counters.lastError })
        idle = Math.min(MAX_IDLE_BACKOFF_MS, idle * 2)
      }
      if (sent === 0 && this.running && !this.poked)
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, idle)
          this.wake = () => {
            clearTimeout(t)
            resolve()
          }
        })
    }
  }

  /**
   * Claims one batch of due deliveries and starts sending them, without waiting for the sends;
   * returns how many it started. A send that ends wakes the loop: its target may take more.
   */
  async runOnce(): Promise<number> {
    const room = MAX_IN_FLIGHT - this.sending.size
    if (room <= 0) return 0
    const now = this.d.clock.now()
    const busy = [...this.perTarget].filter(([, n]) => n >= PER_TARGET).map(([k]) => k)
    const rows = await this.claim(now, Math.min(BATCH, room), busy)
    if (rows.length === 0) return 0
    const start: Claimed[] = []
    const putBack: Claimed[] = []
    const taken = new Map<string, number>()
    for (const r of rows) {
      const k = targetOf(r)
      const n = (this.perTarget.get(k) ?? 0) + (taken.get(k) ?? 0)
      if (n >= PER_TARGET) putBack.push(r)
      else {
        taken.set(k, (taken.get(k) ?? 0) + 1)
        start.push(r)
      }
    }
    if (putBack.length > 0) await this.unclaim(putBack)
    if (start.length === 0) return 0
    const endpoints = await this.endpoints([...new Set(start.filter((r) => r.channel === 'webhook').map((r) => r.account_id))])
    const chats = await this.linkedChats(start.filter((r) => r.channel === 'telegram'))
    for (const r of start) {
      const k = targetOf(r)
      this.perTarget.set(k, (this.perTarget.get(k) ?? 0) + 1)
      const p: Promise<void> = this.deliver(r, endpoints, chats)
        .catch((e) => {
          // Not recorded: the row keeps its lease and is tried again after it (at least once).
          this.counters.lastError = e instanceof Error ? e.message : String(e)
          this.d.log.warn('event_delivery_failed', { delivery_id: r.id, error: this.counters.lastError })
        })
        .finally(() => {
          const left = (this.perTarget.get(k) ?? 1) - 1
          if (left > 0) this.perTarget.set(k, left)
          else this.perTarget.delete(k)
          this.sending.delete(p)
          this.poke()
        })
      this.sending.add(p)
    }
    return start.length
  }

  private async deliver(r: Claimed, endpoints: Map<string, { url: string; secret: string; events: string[] | null }>, chats: Set<string>): Promise<void> {
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
  }

  private async claim(now: number, limit: number, busyTargets: string[]): Promise<Claimed[]> {
    const skipBusy =
      busyTargets.length === 0
        ? sql``
        : sql`and (account_id || '|' || channel || '|' || target) not in (${sql.join(
            busyTargets.map((k) => sql`${k}`),
            sql`, `,
          )})`
    const rows = await this.d.db.execute(sql`
      with due as (
        select id, next_attempt_at as was from event_deliveries
         where status = 'pending' and next_attempt_at <= ${new Date(now).toISOString()} ${skipBusy}
         order by next_attempt_at
         limit ${limit}
         for update skip locked
      ), claimed as (
        update event_deliveries d set next_attempt_at = ${new Date(now + LEASE_MS).toISOString()}
          from due where d.id = due.id
        returning d.id, d.event_id, d.account_id, d.channel, d.target, d.attempts, d.created_at, due.was
      )
      select c.*, e.type, e.data, e.at from claimed c join events e on e.id = c.event_id
       order by c.was`)
    return rowsOf(rows).map((r) => ({
      id: Number(r.id),
      event_id: String(r.event_id),
      account_id: String(r.account_id),
      channel: String(r.channel),
      target: String(r.target),
      attempts: Number(r.attempts),
      created_at: new Date(r.created_at as string),
      was: new Date(r.was as string),
      type: String(r.type),
      data: typeof r.data === 'string' ? JSON.parse(r.data) : r.data,
      at: new Date(r.at as string),
    }))
  }

  /** Gives claimed rows back unsent: due again at their old time, so their order is kept. */
  private async unclaim(rows: Claimed[]): Promise<void> {
    const list = JSON.stringify(rows.map((r) => ({ id: r.id, was: r.was.toISOString() })))
    await this.d.db.execute(sql`
      update event_deliveries d set next_attempt_at = (x->>'was')::timestamptz
        from jsonb_array_elements(${list}::jsonb) x
       where d.id = (x->>'id')::bigint and d.status = 'pending'`)
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
