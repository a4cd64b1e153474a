/**
 * Proposals back into Redis after a data loss (ledger:rebuild, src/ledger/rebuild.ts): the
 * Postgres projection, unless the outbox still holds a newer version of a record. Every record
 * comes back (the decided ones answer GET and the list as before); the pending ones are indexed
 * again, so they keep counting against the limit and expire on time. An approval's claim does not
 * come back: the top-up it waited for either credited (the ledger has it) or did not.
 */
import { eq } from 'drizzle-orm'
import type { Database } from '../db/client'
import { proposals } from '../db/schema'
import { scanOutbox } from '../write-behind/outbox'
import type { RedisContext } from '../redis/context'
import type { ProposalKind, ProposalRecord, ProposalStatus } from './record'
import { proposalOfEntry } from './sink'

type Row = typeof proposals.$inferSelect

function recordOf(r: Row): ProposalRecord {
  return {
    id: r.id,
    kind: r.kind as ProposalKind,
    value: r.value,
    ...(r.agentId ? { agent_id: r.agentId } : {}),
    by: r.proposedBy,
    reason: r.reason,
    status: r.status as ProposalStatus,
    created: r.createdAt.getTime(),
    expires: r.expiresAt.getTime(),
    ...(r.decidedAt ? { decided: r.decidedAt.getTime() } : {}),
    ...(r.decidedVia ? { via: r.decidedVia as ProposalRecord['via'] } : {}),
    ...(r.note !== null ? { note: r.note } : {}),
    ...(r.forS !== null ? { for_s: r.forS } : {}),
    ...(r.lapsesAt ? { lapses: r.lapsesAt.getTime() } : {}),
    v: r.version,
  }
}

export async function planProposals(ctx: RedisContext, db: Database, account: string): Promise<ProposalRecord[]> {
  const byId = new Map<string, ProposalRecord>()
  for (const r of await db.select().from(proposals).where(eq(proposals.accountId, account))) byId.set(r.id, recordOf(r))
  for await (const e of scanOutbox(ctx, ctx.keys.shardOf(account))) {
    if (e.kind !== 'proposal' || e.fields.acct !== account) continue
    const { record } = proposalOfEntry(e)
    if (record.v > (byId.get(record.id)?.v ?? 0)) byId.set(record.id, record)
  }
  return [...byId.values()].map(({ claim: _c, claim_until: _u, ...r }) => r)
}

export async function restoreProposals(ctx: RedisContext, account: string, list: ProposalRecord[]): Promise<void> {
  const { keys, redis } = ctx
  const m = redis.multi().del(keys.proposals(account), keys.pendingProposals(account))
  for (const r of list) {
    m.hset(keys.proposals(account), r.id, JSON.stringify(r))
    if (r.status === 'pending') m.zadd(keys.pendingProposals(account), r.expires, r.id)
  }
  await m.exec()
}
