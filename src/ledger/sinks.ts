/**
 * Where each kind of outbox entry lands in Postgres. Every insert is idempotent on the entry's own
 * id, so redelivery after a crash between commit and ack changes nothing.
 */
import { eq } from 'drizzle-orm'
import type { Database } from '../db/client'
import { accountPolicySink, agentSink } from './governance-sinks'
import { mandateSink, parkedSink } from './payment-sinks'
import { accounts, calls, ledgerEntries } from '../db/schema'
import { shardOfAccount } from '../redis/keys'
import type { CallRecord } from './calls'

export interface OutboxEntry {
  streamId: string
  kind: string
  fields: Record<string, string>
}

export type Sink = (tx: Database, entries: OutboxEntry[]) => Promise<void>

/** Kinds that move money: one immutable ledger row each. */
export const MONEY_KINDS = ['grant', 'debit', 'refund', 'referral', 'topup'] as const

const at = (ms: string | undefined) => new Date(Number(ms))

const ledgerSink: Sink = async (tx, entries) => {
  await tx
    .insert(ledgerEntries)
    .values(
      entries.map(({ streamId, kind, fields: f }) => ({
        id: f.id!,
        accountId: f.acct!,
        agentId: f.agent || null,
        kind,
        amount: Number(f.amount),
        balanceAfter: Number(f.bal),
        callId: f.call || null,
        refId: f.ref || null,
        target: f.target || null,
        at: at(f.at),
        streamId,
      })),
    )
    .onConflictDoNothing({ target: ledgerEntries.id })
}

const callSink: Sink = async (tx, entries) => {
  await tx
    .insert(calls)
    .values(
      entries.map(({ fields }) => {
        const r = JSON.parse(fields.rec!) as CallRecord & { account_id: string }
        return {
          callId: r.call_id,
          accountId: r.account_id,
          agentId: r.agent_id,
          slug: r.slug,
          charged: r.charged,
          refunded: r.refunded ? 1 : 0,
          outcome: r.outcome,
          httpStatus: r.http_status,
          latencyMs: r.latency_ms,
          at: new Date(r.at),
        }
      }),
    )
    .onConflictDoNothing({ target: calls.callId })
}

const accountSink: Sink = async (tx, entries) => {
  await tx
    .insert(accounts)
    .values(
      entries.map(({ fields: f }) => ({
        id: f.acct!,
        email: f.email!,
        publicRef: f.public_ref!,
        origin: f.origin || null,
        referredBy: f.referrer || null,
        shard: shardOfAccount(f.acct!),
        ownerTokenHash: f.owner!,
        createdAt: at(f.at),
      })),
    )
    .onConflictDoNothing({ target: accounts.id })
}

/** A rotated owner token: the durable copy follows the newest hash (rotations are rare, row by row). */
const ownerSink: Sink = async (tx, entries) => {
  for (const { fields: f } of entries)
    await tx.update(accounts).set({ ownerTokenHash: f.owner! }).where(eq(accounts.id, f.acct!))
}

export const SINKS: Record<string, Sink> = {
  ...Object.fromEntries(MONEY_KINDS.map((k) => [k, ledgerSink])),
  call: callSink,
  account: accountSink,
  owner: ownerSink,
  agent: agentSink,
  account_policy: accountPolicySink,
  mandate: mandateSink,
  parked: parkedSink,
}
