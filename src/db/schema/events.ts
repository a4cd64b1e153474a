import { bigserial, index, integer, jsonb, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' })

/**
 * Owner events (src/events/types.ts), written once each: the id is fixed before the write, so an
 * outbox entry redelivered after a crash inserts nothing new.
 */
export const events = pgTable(
  'events',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    type: text('type').notNull(),
    data: jsonb('data').notNull(),
    at: ts('at').notNull(),
  },
  (t) => [index('events_account').on(t.accountId, t.at)],
)

/**
 * One endpoint per account. The signing secret must be readable to sign (Standard Webhooks is an
 * HMAC), so it is stored as is; it is shown to the owner once, when generated.
 */
export const webhookEndpoints = pgTable('webhook_endpoints', {
  accountId: text('account_id').primaryKey(),
  url: text('url').notNull(),
  /** Event types wanted; null = every type. */
  events: text('events').array(),
  secret: text('secret').notNull(),
  createdAt: ts('created_at').notNull(),
  updatedAt: ts('updated_at').notNull(),
})

/** A chat linked to an account (POST /v1/operator/link, then `/link <code>` in the chat). Commands are taken from the linking user only. */
export const operatorChats = pgTable(
  'operator_chats',
  {
    chatId: text('chat_id').notNull(),
    userId: text('user_id').notNull(),
    accountId: text('account_id').notNull(),
    linkedAt: ts('linked_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.chatId, t.userId] }), index('operator_chats_account').on(t.accountId)],
)

/**
 * The delivery of one event to one channel: a webhook (target '' = the account's endpoint as it is
 * when sent) or a chat (target = chat id). Retried with backoff for a day; `next_attempt_at` is on
 * the app clock and doubles as the claim lease of the worker sending it.
 */
export const eventDeliveries = pgTable(
  'event_deliveries',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    eventId: text('event_id').notNull(),
    accountId: text('account_id').notNull(),
    channel: text('channel').notNull(),
    target: text('target').notNull(),
    /** pending | delivered | failed (gave up after a day) | cancelled (endpoint or chat removed) */
    status: text('status').notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at').notNull(),
    lastAttemptAt: ts('last_attempt_at'),
    lastResponseCode: integer('last_response_code'),
    lastError: text('last_error'),
    createdAt: ts('created_at').notNull(),
    deliveredAt: ts('delivered_at'),
  },
  (t) => [
    uniqueIndex('event_deliveries_once').on(t.eventId, t.channel, t.target),
    index('event_deliveries_due').on(t.status, t.nextAttemptAt),
    index('event_deliveries_account').on(t.accountId, t.channel, t.createdAt),
  ],
)
