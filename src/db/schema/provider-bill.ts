import { bigint, date, doublePrecision, integer, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core'

/**
 * The reconciliation with the providers' bills (docs/api.md §13d): one run per UTC day and provider
 * (its outcome, and when an unavailable usage API is asked again) …
 */
export const providerBillRuns = pgTable(
  'provider_bill_runs',
  {
    day: date('day', { mode: 'string' }).notNull(),
    provider: text('provider').notNull(),
    /** ok | drift | unavailable */
    status: text('status').notNull(),
    /** Runs that found the usage API unavailable, in a row (the backoff's exponent). */
    attempts: integer('attempts').notNull(),
    /** When an unavailable day is asked for again; null once the provider answered. */
    retryAt: timestamp('retry_at', { withTimezone: true, mode: 'date' }),
    /** Why the usage API was unavailable (HTTP status, network error); null when it answered. */
    error: text('error'),
    checkedAt: timestamp('checked_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.day, t.provider] })],
)

/** … and one row per model of that run: our metered tokens, the provider's, the drift. */
export const providerBillRows = pgTable(
  'provider_bill_rows',
  {
    day: date('day', { mode: 'string' }).notNull(),
    provider: text('provider').notNull(),
    model: text('model').notNull(),
    oursInput: bigint('ours_input', { mode: 'number' }).notNull(),
    oursCached: bigint('ours_cached', { mode: 'number' }).notNull(),
    oursOutput: bigint('ours_output', { mode: 'number' }).notNull(),
    /** Null when the usage API was unavailable. */
    theirsInput: bigint('theirs_input', { mode: 'number' }),
    theirsCached: bigint('theirs_cached', { mode: 'number' }),
    theirsOutput: bigint('theirs_output', { mode: 'number' }),
    driftPct: doublePrecision('drift_pct'),
    /** ok | drift | unavailable | unmetered */
    status: text('status').notNull(),
    /** House-lane requests of that provider and day on routes we do not meter (opened by the operator). */
    unmeteredRequests: integer('unmetered_requests').notNull(),
  },
  (t) => [primaryKey({ columns: [t.day, t.provider, t.model] })],
)
