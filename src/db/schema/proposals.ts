import { index, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core'

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' })

/**
 * Proposals (docs/api.md §11), projected from `proposal` outbox entries. Redis holds the live record
 * (src/proposals/); each entry carries the whole record and the version Redis bumped, and a row is
 * only replaced by a higher version, so a redelivered or late entry never rolls a decision back.
 * `ledger:rebuild` reads them back into Redis.
 */
export const proposals = pgTable(
  'proposals',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    /** null = the account's own (an owner's raise_daily_cap or topup). */
    agentId: text('agent_id'),
    /** raise_daily_cap | raise_budget | allow | topup */
    kind: text('kind').notNull(),
    /** Credits as digits, or the pattern of an `allow`. */
    value: text('value').notNull(),
    reason: text('reason').notNull(),
    /** The proposing agent's id, or `owner`. */
    proposedBy: text('proposed_by').notNull(),
    /** pending | approved | declined | expired */
    status: text('status').notNull(),
    /** api | chat | expiry; null while pending. */
    decidedVia: text('decided_via'),
    note: text('note'),
    createdAt: ts('created_at').notNull(),
    expiresAt: ts('expires_at').notNull(),
    decidedAt: ts('decided_at'),
    /** A temporary raise (docs/api.md §13b): the duration asked for, seconds; null = none asked. */
    forS: integer('for_s'),
    /** An approval for a time: when its raise lapses; null = a lasting change (or not approved). */
    lapsesAt: ts('lapses_at'),
    version: integer('version').notNull(),
    updatedAt: ts('updated_at').notNull(),
  },
  (t) => [index('proposals_account').on(t.accountId, t.createdAt)],
)
