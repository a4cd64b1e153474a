import { pgTable, smallint, text, timestamp } from 'drizzle-orm/pg-core'

/** Written by the flusher from the outbox: Redis creates the account, Postgres keeps it. */
export const accounts = pgTable('accounts', {
  id: text('id').primaryKey(),
  email: text('email').notNull().unique(),
  publicRef: text('public_ref').notNull().unique(),
  origin: text('origin'),
  referredBy: text('referred_by'),
  shard: smallint('shard').notNull(),
  ownerTokenHash: text('owner_token_hash').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
})
