/**
 * The flusher's sink of `proposal` outbox entries (propose.lua, decide-proposal.lua): each carries the
 * whole record and its version, and a row is only replaced by a higher version, so a redelivered
 * entry, or an older one reclaimed after a newer one, never rolls a decision back.
 */
import { sql } from 'drizzle-orm'
import type { Database } from '../db/client'
import { proposals } from '../db/schema'
import type { OutboxEntry, Sink } from '../write-behind/outbox'
import { parseRecord, type ProposalRecord } from './record'

/** The record an entry carries, with its account. */
export function proposalOfEntry({ fields: f }: OutboxEntry): { accountId: string; record: ProposalRecord } {
  return { accountId: f.acct!, record: parseRecord(f.rec!) }
}

const at = (ms: number | undefined) => (ms === undefined ? null : new Date(ms))

export function rowOf(accountId: string, r: ProposalRecord, updatedMs: number): typeof proposals.$inferInsert {
  return {
    id: r.id,
    accountId,
    agentId: r.agent_id ?? null,
    kind: r.kind,
    value: r.value,
    reason: r.reason,
    proposedBy: r.by,
    status: r.status,
    decidedVia: r.via ?? null,
    note: r.note ?? null,
    createdAt: new Date(r.created),
    expiresAt: new Date(r.expires),
    decidedAt: at(r.decided),
    forS: r.for_s ?? null,
    lapsesAt: at(r.lapses),
    version: r.v,
    updatedAt: new Date(updatedMs),
  }
}

export const proposalSink: Sink = async (tx: Database, entries) => {
  // ON CONFLICT cannot touch one row twice per statement: keep each proposal's highest version.
  const best = new Map<string, typeof proposals.$inferInsert>()
  for (const e of entries) {
    const { accountId, record } = proposalOfEntry(e)
    const cur = best.get(record.id)
    if (!cur || record.v > cur.version) best.set(record.id, rowOf(accountId, record, Number(e.fields.at)))
  }
  if (best.size === 0) return
  await tx
    .insert(proposals)
    .values([...best.values()])
    .onConflictDoUpdate({
      target: proposals.id,
      set: {
        status: sql`excluded.status`,
        decidedVia: sql`excluded.decided_via`,
        note: sql`excluded.note`,
        decidedAt: sql`excluded.decided_at`,
        lapsesAt: sql`excluded.lapses_at`,
        version: sql`excluded.version`,
        updatedAt: sql`excluded.updated_at`,
      },
      setWhere: sql`${proposals.version} < excluded.version`,
    })
}
