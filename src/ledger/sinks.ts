/**
 * Where each kind of outbox entry lands in Postgres. Every insert is idempotent on the entry's own
 * id, so redelivery after a crash between commit and ack changes nothing.
 */
import { eq, sql } from 'drizzle-orm'
import type { Database } from '../db/client'
import { accountPolicySink, agentSink } from './governance-sinks'
import { eventSink } from '../events/sink'
import { mandateSink, parkedSink } from './payment-sinks'
import { accounts } from '../db/schema'
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

/**
 * One INSERT … SELECT FROM jsonb_to_recordset per batch: the rows travel as a single JSON parameter.
 * Building a multi-row VALUES list through the query builder cost a third of the service's CPU per
 * paid call under load (bench/RESULTS.md); this keeps the same rows and the same ON CONFLICT.
 * `columns` are `name type` pairs of the target table; `at` columns carry epoch milliseconds.
 */
async function insertRows(tx: Database, table: string, columns: string, conflict: string, rows: Record<string, unknown>[]): Promise<void> {
  const names = columns.split(',').map((c) => c.trim().split(' ')[0]!)
  const select = names.map((n) => (n === 'at' ? `timestamptz 'epoch' + at * interval '1 millisecond'` : n)).join(', ')
  const recordType = columns.replace(/\bat timestamptz\b/, 'at bigint')
  await tx.execute(
    sql`${sql.raw(`insert into ${table} (${names.join(', ')}) select ${select} from jsonb_to_recordset(`)}${JSON.stringify(rows)}${sql.raw(
      `::jsonb) as x(${recordType}) on conflict (${conflict}) do nothing`,
    )}`,
  )
}

const ledgerSink: Sink = (tx, entries) =>
  insertRows(
    tx,
    'ledger_entries',
    'id text, account_id text, agent_id text, kind text, amount bigint, balance_after bigint, call_id text, ref_id text, target text, at timestamptz, stream_id text',
    'id',
    entries.map(({ streamId, kind, fields: f }) => ({
      id: f.id,
      account_id: f.acct,
      agent_id: f.agent || null,
      kind,
      amount: Number(f.amount),
      balance_after: Number(f.bal),
      call_id: f.call || null,
      ref_id: f.ref || null,
      target: f.target || null,
      at: Number(f.at),
      stream_id: streamId,
    })),
  )

const callSink: Sink = (tx, entries) =>
  insertRows(
    tx,
    'calls',
    'call_id text, account_id text, agent_id text, slug text, charged integer, refunded integer, outcome text, http_status integer, latency_ms integer, at timestamptz',
    'call_id',
    entries.map(({ fields }) => {
      const r = JSON.parse(fields.rec!) as CallRecord & { account_id: string }
      return {
        call_id: r.call_id,
        account_id: r.account_id,
        agent_id: r.agent_id,
        slug: r.slug,
        charged: r.charged,
        refunded: r.refunded ? 1 : 0,
        outcome: r.outcome,
        http_status: r.http_status,
        latency_ms: r.latency_ms,
        at: Date.parse(r.at),
      }
    }),
  )

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
  event: eventSink,
}
