/**
 * Outbox sinks of the money-in records: `mandate` snapshots and `parked` payment states. Both are
 * rare, so they are written row by row, in stream order, as upserts. A redelivered entry changes
 * nothing: a mandate row only moves to a newer version, a parked row only to a later state.
 */
import { inArray, sql } from 'drizzle-orm'
import { mandates, parkedPayments } from '../db/schema'
import { writtenId, type Sink } from '../write-behind/outbox'

/** Stream ids ("ms-seq") of one shard's stream, as one increasing number. */
function version(streamId: string): bigint {
  const [ms, seq] = streamId.split('-')
  return BigInt(ms ?? 0) * 1_000_000n + BigInt(seq ?? 0)
}

const num = (v: string | undefined) => (v === undefined || v === '' ? null : Number(v))
const str = (v: string | undefined) => (v === undefined || v === '' ? null : v)

export const mandateSink: Sink = async (tx, entries) => {
  for (const e of entries) {
    const f = e.fields
    const row = {
      accountId: f.acct!,
      enabled: f.enabled === '1',
      threshold: num(f.threshold),
      refill: num(f.refill),
      ceiling: num(f.ceiling),
      cardBrand: str(f.brand),
      cardLast4: str(f.last4),
      gateway: str(f.gateway),
      gatewayCustomer: str(f.customer),
      reason: f.reason ?? 'update',
      updatedAt: new Date(Number(f.at)),
      // Where its script wrote it, not where a dead-letter replay put it: a replayed old snapshot stays old.
      version: version(writtenId(e)),
    }
    const { accountId: _key, ...set } = row
    await tx
      .insert(mandates)
      .values(row)
      .onConflictDoUpdate({ target: mandates.accountId, set, setWhere: sql`${mandates.version} < excluded.version` })
  }
}

/** A parked payment's states in the order they can follow each other; a row only moves forward. */
const RANK: Record<string, number> = { parked: 0, refund_unknown: 1, approved: 2, rejected: 2, reversed: 2 }
/** The states a row may be moved from into `state`: those ranked below it. */
const before = (state: string) => Object.keys(RANK).filter((k) => RANK[k]! < (RANK[state] ?? 0))

export const parkedSink: Sink = async (tx, entries) => {
  for (const { fields: f } of entries) {
    const at = new Date(Number(f.at))
    const decided = f.state !== 'parked'
    await tx
      .insert(parkedPayments)
      .values({
        id: f.pid!,
        accountId: f.acct!,
        chargeId: f.charge!,
        credits: Number(f.credits),
        kind: f.pkind ?? '',
        gateway: f.gateway ?? '',
        state: f.state!,
        createdAt: at,
        decidedAt: decided ? at : null,
      })
      .onConflictDoUpdate({
        target: parkedPayments.id,
        set: { state: f.state!, decidedAt: decided ? at : null },
        // Only forward: parked → refund_unknown → rejected, parked → approved, parked | refund_unknown → reversed.
        setWhere: before(f.state!).length > 0 ? inArray(parkedPayments.state, before(f.state!)) : sql`false`,
      })
  }
}
