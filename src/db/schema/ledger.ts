import { sql } from 'drizzle-orm'
import { bigint, index, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core'

/**
 * The durable copy of the Redis ledger. Entries are immutable; a refund or a bonus is a new row
 * whose `refId` names the entry it corrects. `id` is generated before the Redis write, so a
 * redelivered outbox entry is a no-op (ON CONFLICT DO NOTHING).
 */
export const ledgerEntries = pgTable(
  'ledger_entries',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    agentId: text('agent_id'),
    /** grant | debit | refund | referral | topup | reversal */
    kind: text('kind').notNull(),
    /** Signed credits: debits negative. */
    amount: bigint('amount', { mode: 'number' }).notNull(),
    balanceAfter: bigint('balance_after', { mode: 'number' }).notNull(),
    callId: text('call_id'),
    refId: text('ref_id'),
    target: text('target'),
    /**
     * Credits a bonus was worth but did not credit (referral: the balance cap, the referrer's daily
     * limit), a reversal could not take back (already spent) or recorded before its charge's credit,
     * or a top-up did not credit (reversed before it); null when none.
     */
    uncredited: bigint('uncredited', { mode: 'number' }),
    /** Why `uncredited`: balance_cap | referrer_daily_limit | unrecovered | before_credit | reversed. */
    uncreditedReason: text('uncredited_reason'),
    /** Metered calls (docs/api.md §7): the model on the debit and on the settle; the tokens on the settle. */
    model: text('model'),
    tokensIn: integer('tokens_in'),
    tokensCached: integer('tokens_cached'),
    tokensOut: integer('tokens_out'),
    /** Tokens written to the provider's prompt cache (Anthropic), 5-minute and 1-hour; null when none. */
    tokensCacheWrite: integer('tokens_cache_write'),
    tokensCacheWrite1h: integer('tokens_cache_write_1h'),
    /**
     * A metered settle: the account's micro-credit remainder after it (`mc_rem`, docs/api.md §7), so
     * that `ledger:rebuild` brings the remainder back with the balance. Null on every other entry.
     */
    mcRem: bigint('mc_rem', { mode: 'number' }),
    at: timestamp('at', { withTimezone: true, mode: 'date' }).notNull(),
    streamId: text('stream_id').notNull(),
  },
  (t) => [
    index('ledger_entries_account_at').on(t.accountId, t.at),
    // The statement's order (src/ledger/statement.ts): an account's entries as its shard's stream
    // applied them (one stream per shard, so one order per account), which the writers' clocks
    // (`at`) only approximate across instances.
    index('ledger_entries_account_stream').on(t.accountId, sql`(split_part(${t.streamId}, '-', 1)::bigint)`, sql`(split_part(${t.streamId}, '-', 2)::bigint)`, t.id),
  ],
)

/** Call metadata for /v1/activity (never payloads). */
export const calls = pgTable(
  'calls',
  {
    callId: text('call_id').primaryKey(),
    accountId: text('account_id').notNull(),
    agentId: text('agent_id'),
    slug: text('slug').notNull(),
    charged: integer('charged').notNull(),
    refunded: integer('refunded').notNull(),
    /** Written only from a CallRecord (ledger/sinks.ts), so only the words of the outcome table (paid-request/outcome.ts). */
    outcome: text('outcome').notNull(),
    httpStatus: integer('http_status'),
    latencyMs: integer('latency_ms').notNull(),
    /** Metered calls (docs/api.md §7); null for flat-priced ones. */
    model: text('model'),
    tokensIn: integer('tokens_in'),
    tokensCached: integer('tokens_cached'),
    tokensOut: integer('tokens_out'),
    /** Tokens written to the provider's prompt cache (Anthropic), 5-minute and 1-hour; null when none. */
    tokensCacheWrite: integer('tokens_cache_write'),
    tokensCacheWrite1h: integer('tokens_cache_write_1h'),
    reserved: integer('reserved'),
    uncharged: integer('uncharged'),
    /** provider | estimated */
    usageSource: text('usage_source'),
    /** house | owner: whose provider key the request went out with (docs/api.md §13d); null when none was chosen. */
    lane: text('lane'),
    at: timestamp('at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  // Activity's order (src/account/views.ts): `at`, then the call id byte by byte (collate "C"). The
  // call id in the default collation (calls_account_at, before 0014) gave that order to no query and
  // made every insert dearer (bench/RESULTS.md, "Postgres per paid call (issue 42)").
  (t) => [
    index('calls_account_time').on(t.accountId, t.at),
    // The reconciliation's sums read one UTC day of calls (docs/api.md §13d). BRIN: rows arrive in
    // about `at` order, and its upkeep on the hot insert path is a page summary, not a B-tree entry.
    index('calls_at_brin').using('brin', t.at),
  ],
)
