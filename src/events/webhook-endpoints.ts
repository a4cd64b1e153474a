/**
 * The account's webhook endpoint (one per account), its recent deliveries, and the event feed.
 * The signing secret is generated here (whsec_ + 32 random bytes, base64: the Standard Webhooks
 * secret format) and returned only in the answer that generated it.
 * errors: BAD_REQUEST (url), NOT_FOUND (no endpoint; a bad cursor).
 */
import { randomBytes } from 'node:crypto'
import { and, desc, eq, lt, or } from 'drizzle-orm'
import { events, eventDeliveries, webhookEndpoints } from '../db/schema'
import { checkEndpointUrl } from './endpoint-url'
import { ApiError } from '../errors'
import type { Config } from '../config'
import type { RedisContext } from '../redis/context'
import type { DbHandle } from '../db/client'


/** What the webhook routes use of the process's services. */
export interface WebhookDeps {
  cfg: Config
  ctx: RedisContext
  db: DbHandle
}

const newSecret = () => 'whsec_' + randomBytes(32).toString('base64')

type Row = typeof webhookEndpoints.$inferSelect

const view = (r: Row) => ({ url: r.url, events: r.events, created_at: r.createdAt.toISOString(), updated_at: r.updatedAt.toISOString() })

const notFound = () => new ApiError('NOT_FOUND', { resource: 'webhook endpoint (set one with PUT /v1/webhooks)' })

export async function putWebhook(s: WebhookDeps, acct: string, body: { url: string; events?: string[]; rotate_secret?: boolean }) {
  const url = checkEndpointUrl(body.url, s.cfg.WEBHOOKS_ALLOW_INSECURE_LOOPBACK === '1')
  const now = new Date(s.ctx.clock.now())
  const wanted = body.events ?? null
  const fresh = newSecret()
  // One statement: a first PUT inserts with the fresh secret; a later one keeps the stored secret
  // unless asked to rotate. The secret is shown only when the row came back holding the fresh one.
  const [row] = await s.db.db
    .insert(webhookEndpoints)
    .values({ accountId: acct, url, events: wanted, secret: fresh, createdAt: now, updatedAt: now })
    .onConflictDoUpdate({
      target: webhookEndpoints.accountId,
      set: { url, events: wanted, updatedAt: now, ...(body.rotate_secret ? { secret: fresh } : {}) },
    })
    .returning()
  const generated = row!.secret === fresh
  return { ...view(row!), secret: generated ? fresh : null }
}

export async function getWebhook(s: WebhookDeps, acct: string) {
  const [row] = await s.db.db.select().from(webhookEndpoints).where(eq(webhookEndpoints.accountId, acct))
  if (!row) throw notFound()
  return view(row)
}

/**
 * Pending deliveries to the removed endpoint are cancelled with it, in one transaction: an endpoint
 * set again later never receives them (the worker also cancels what it finds with no endpoint).
 */
export async function deleteWebhook(s: WebhookDeps, acct: string): Promise<void> {
  await s.db.db.transaction(async (tx) => {
    const gone = await tx.delete(webhookEndpoints).where(eq(webhookEndpoints.accountId, acct)).returning({ a: webhookEndpoints.accountId })
    if (gone.length === 0) throw notFound()
    await tx
      .update(eventDeliveries)
      .set({ status: 'cancelled', lastError: 'webhook endpoint removed' })
      .where(and(eq(eventDeliveries.accountId, acct), eq(eventDeliveries.channel, 'webhook'), eq(eventDeliveries.status, 'pending')))
  })
}

const iso = (d: Date | null) => (d ? d.toISOString() : null)

export const MAX_LIMIT = 200

export function pageLimit(raw: string | undefined): number {
  const limit = raw === undefined ? 50 : Number(raw)
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new ApiError('BAD_REQUEST', { field: 'limit', expected: `an integer from 1 to ${MAX_LIMIT}` })
  return limit
}

export async function recentDeliveries(s: WebhookDeps, acct: string, limit: number) {
  const rows = await s.db.db
    .select({ d: eventDeliveries, type: events.type })
    .from(eventDeliveries)
    .innerJoin(events, eq(events.id, eventDeliveries.eventId))
    .where(and(eq(eventDeliveries.accountId, acct), eq(eventDeliveries.channel, 'webhook')))
    .orderBy(desc(eventDeliveries.createdAt), desc(eventDeliveries.id))
    .limit(limit)
  return {
    deliveries: rows.map(({ d, type }) => ({
      id: d.id,
      event_id: d.eventId,
      event_type: type,
      status: d.status,
      attempts: d.attempts,
      next_retry_at: d.status === 'pending' ? d.nextAttemptAt.toISOString() : null,
      last_response_code: d.lastResponseCode,
      last_error: d.lastError,
      last_attempt_at: iso(d.lastAttemptAt),
      created_at: d.createdAt.toISOString(),
      delivered_at: iso(d.deliveredAt),
    })),
  }
}

/**
 * A cursor is `base64url(<epoch ms>|<event id>)`. Anything else — a forged or truncated one, a date
 * past what Date holds, an id Postgres text cannot carry (NUL) — is the caller's BAD_REQUEST, not a
 * query that fails as a 500.
 */
function decodeEventCursor(cursor: string): { at: Date; id: string } {
  const decoded = Buffer.from(cursor, 'base64url').toString()
  const bar = decoded.indexOf('|')
  const [ms, id] = bar < 0 ? [decoded, ''] : [decoded.slice(0, bar), decoded.slice(bar + 1)]
  const at = new Date(Number(ms))
  if (!/^\d{1,15}$/.test(ms) || Number.isNaN(at.getTime()) || !id || !/^[\x21-\x7e]{1,200}$/.test(id))
    throw new ApiError('BAD_REQUEST', { field: 'cursor', expected: 'the next_cursor of a previous page' })
  return { at, id }
}

/** The account's events, newest first; the cursor is the last event's (time, id). */
export async function listEvents(s: WebhookDeps, acct: string, limit: number, cursor?: string) {
  const after = cursor ? decodeEventCursor(cursor) : null
  const rows = await s.db.db
    .select()
    .from(events)
    .where(and(eq(events.accountId, acct), after ? or(lt(events.at, after.at), and(eq(events.at, after.at), lt(events.id, after.id))) : undefined))
    .orderBy(desc(events.at), desc(events.id))
    .limit(limit + 1)
  const page = rows.slice(0, limit)
  const last = page.at(-1)
  return {
    events: page.map((e) => ({ id: e.id, type: e.type, timestamp: e.at.toISOString(), data: e.data as Record<string, unknown> })),
    next_cursor: rows.length > limit && last ? Buffer.from(`${last.at.getTime()}|${last.id}`).toString('base64url') : null,
  }
}
