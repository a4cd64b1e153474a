import { bigint, boolean, index, pgTable, text, timestamp } from 'drizzle-orm/pg-core'

/**
 * The durable copy of each account's auto-refill mandate (Redis holds the live one). Written by
 * the flusher from `mandate` snapshots; `version` (the outbox stream id as ms·10⁶+seq, one stream per
 * shard, so one order per account) keeps a redelivered older snapshot from overwriting a newer one.
 * No card number is ever stored: the brand and last 4 digits, and the processor's customer id.
 */
export const mandates = pgTable('mandates', {
  accountId: text('account_id').primaryKey(),
  enabled: boolean('enabled').notNull(),
  threshold: bigint('threshold', { mode: 'number' }),
  refill: bigint('refill', { mode: 'number' }),
  ceiling: bigint('ceiling', { mode: 'number' }),
  cardBrand: text('card_brand'),
  cardLast4: text('card_last4'),
  gateway: text('gateway'),
  gatewayCustomer: text('gateway_customer'),
  /** What made the last change: consent | update | deleted | authentication_required */
  reason: text('reason').notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
  version: bigint('version', { mode: 'bigint' }).notNull(),
})

/** Card payments parked because they would pass the balance cap, and the founder's decision. */
export const parkedPayments = pgTable(
  'parked_payments',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    chargeId: text('charge_id').notNull(),
    credits: bigint('credits', { mode: 'number' }).notNull(),
    /** pack | refill | topup */
    kind: text('kind').notNull(),
    gateway: text('gateway').notNull(),
    /** parked | approved | rejected */
    state: text('state').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    decidedAt: timestamp('decided_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [index('parked_payments_account').on(t.accountId)],
)
