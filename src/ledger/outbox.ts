/**
 * The outbox entry as the flusher reads it from a shard's stream, and the shape of a sink that
 * lands a batch of them in Postgres. Its own file so that the sinks (ledger, governance, payments,
 * events) and their registry can all depend on it without depending on each other.
 */
import type { Database } from '../db/client'

export interface OutboxEntry {
  streamId: string
  kind: string
  fields: Record<string, string>
}

export type Sink = (tx: Database, entries: OutboxEntry[]) => Promise<void>

/** Kinds that move money: one immutable ledger row each. */
export const MONEY_KINDS = ['grant', 'debit', 'refund', 'referral', 'topup'] as const
