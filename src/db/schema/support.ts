import { bigserial, index, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core'

/**
 * Structured support problems (metadata only: never payloads or keys). Not money, so written
 * directly rather than through the outbox. States move forward only: open → acknowledged → resolved.
 */
export const supportProblems = pgTable(
  'support_problems',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    /** The agent that filed it, null for the owner token. */
    agentId: text('agent_id'),
    /** bug | billing | provider | abuse | other */
    category: text('category').notNull(),
    slug: text('slug'),
    callId: text('call_id'),
    errorCode: text('error_code'),
    httpStatus: integer('http_status'),
    summary: text('summary').notNull(),
    /** open | acknowledged | resolved */
    status: text('status').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [index('support_problems_account').on(t.accountId, t.createdAt)],
)

/** The history a problem's status_url shows: every founder move or note, oldest first. */
export const supportUpdates = pgTable(
  'support_updates',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    problemId: text('problem_id')
      .notNull()
      .references(() => supportProblems.id),
    status: text('status').notNull(),
    note: text('note'),
    at: timestamp('at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [index('support_updates_problem').on(t.problemId, t.id)],
)
