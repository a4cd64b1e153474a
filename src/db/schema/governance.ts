import { bigint, index, integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core'

/**
 * Projections of the governance state Redis holds (agent hashes, account policy fields), written
 * by the flusher from `agent` and `account_policy` outbox entries. Each entry carries the full row
 * and a version that Redis bumps on every change; a row is only replaced by a higher version, so
 * redelivered or reordered entries (a reclaimed stale entry arriving after a newer one) change
 * nothing.
 */
export const agents = pgTable(
  'agents',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    name: text('name').notNull(),
    /** active | killed | revoked */
    state: text('state').notNull(),
    tokenHash: text('token_hash').notNull(),
    /** null = no agent-level limit (the account's still apply). */
    dailyCap: bigint('daily_cap', { mode: 'number' }),
    /** null = allow everything; empty = allow nothing. */
    allowlist: text('allowlist').array(),
    perCallMax: bigint('per_call_max', { mode: 'number' }),
    /** The sub-agent tree (docs/api.md §8): the creating agent, null for the operator's own agents. */
    parentId: text('parent_id'),
    /** 1 for the operator's agents, the parent's + 1 below. */
    depth: integer('depth').notNull().default(1),
    /** Lifetime credits of the agent and its subtree; null = none. spent_total is the ledger's Σ. */
    budget: bigint('budget', { mode: 'number' }),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }),
    version: integer('version').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [index('agents_account').on(t.accountId)],
)

export const accountPolicies = pgTable('account_policies', {
  accountId: text('account_id').primaryKey(),
  /** null = the deployment's DEFAULT_DAILY_CAP. */
  dailyCap: bigint('daily_cap', { mode: 'number' }),
  allowlist: text('allowlist').array(),
  balanceCap: bigint('balance_cap', { mode: 'number' }),
  /** Warning levels as the account hash keeps them (docs/api.md §13a): null = the default, '' = off, else '50,80'. */
  thresholds: text('thresholds'),
  version: integer('version').notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
})
