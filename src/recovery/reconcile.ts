/**
 * The ledger of an account as the two stores hold it together: the rows Postgres already has and
 * the money entries still waiting in the shard's outbox stream, united by entry id (an entry that
 * was committed but not yet acked is in both, and counts once). Its sum is what the Redis balance
 * must be; `ledger:rebuild` writes it back when Redis lost data, and the tests check it.
 */
import { eq, inArray } from 'drizzle-orm'
import type { Database } from '../db/client'
import { ledgerEntries } from '../db/schema'
import type { RedisContext } from '../redis/context'
import { isMoneyKind, moneyFields, scanDeadLetters, scanOutbox, writtenId, type MoneyFields } from '../write-behind/outbox'

/** A money entry as reconcile sees it, and where it was found: still in the outbox, in Postgres, or both (committed, not yet acked). */
export type LedgerLine = Pick<MoneyFields, 'id' | 'kind' | 'account' | 'agent' | 'amount' | 'balanceAfter' | 'callId' | 'refId' | 'target' | 'uncredited' | 'at' | 'remainder'> & {
  in: 'outbox' | 'postgres' | 'both'
  /** The stream id (`<ms>-<seq>`) its script wrote it under (outbox.ts, writtenId): the order the shard's scripts wrote them in. */
  streamId: string
}

export interface AccountLedger {
  account: string
  lines: LedgerLine[]
  sum: number
  postgres: { count: number; sum: number }
  outbox: { count: number; sum: number }
}

/**
 * Money entries of the given accounts that only Redis holds: still in one shard's outbox, or in its
 * dead letters (refused by Postgres, awaiting the founder's replay; counted `in: 'outbox'`). The
 * outbox is read first: the flusher moves an entry from it to the dead letters, never back (a
 * replay, the founder's, is the one move a concurrent read could miss).
 */
export async function outboxLines(ctx: RedisContext, shard: number, accounts: Set<string>): Promise<LedgerLine[]> {
  const out: LedgerLine[] = []
  for (const scan of [scanOutbox, scanDeadLetters])
    for await (const e of scan(ctx, shard)) {
      if (!isMoneyKind(e.kind)) continue
      const m = moneyFields(e)
      if (!accounts.has(m.account)) continue
      out.push({ id: m.id, kind: m.kind, account: m.account, agent: m.agent, amount: m.amount, balanceAfter: m.balanceAfter, callId: m.callId, refId: m.refId, target: m.target, uncredited: m.uncredited, at: m.at, remainder: m.remainder, in: 'outbox', streamId: writtenId(e) })
    }
  return out
}

export async function postgresLines(db: Database, accounts: string[]): Promise<LedgerLine[]> {
  if (accounts.length === 0) return []
  const rows = await db.select().from(ledgerEntries).where(accounts.length === 1 ? eq(ledgerEntries.accountId, accounts[0]!) : inArray(ledgerEntries.accountId, accounts))
  return rows.map((r) => ({
    id: r.id,
    kind: r.kind,
    account: r.accountId,
    agent: r.agentId,
    amount: r.amount,
    balanceAfter: r.balanceAfter,
    callId: r.callId,
    refId: r.refId,
    target: r.target,
    uncredited: r.uncredited,
    at: r.at.getTime(),
    remainder: r.mcRem,
    in: 'postgres' as const,
    streamId: r.streamId,
  }))
}

/** The united ledger of each account (all accounts of one shard are read with one pass over its stream). */
export async function accountLedgers(ctx: RedisContext, db: Database, accounts: string[]): Promise<Map<string, AccountLedger>> {
  const byShard = new Map<number, Set<string>>()
  for (const a of accounts) {
    const s = ctx.keys.shardOf(a)
    byShard.set(s, (byShard.get(s) ?? new Set()).add(a))
  }
  // The outbox first, then Postgres: the flusher commits an entry before it deletes it from the
  // outbox, so an entry moving between the two reads is seen twice (united by id), never missed.
  const streams = await Promise.all([...byShard].map(([s, set]) => outboxLines(ctx, s, set)))
  const pg = await postgresLines(db, accounts)
  const out = new Map<string, AccountLedger>()
  for (const a of accounts) out.set(a, { account: a, lines: [], sum: 0, postgres: { count: 0, sum: 0 }, outbox: { count: 0, sum: 0 } })
  const byId = new Map<string, LedgerLine>()
  for (const l of pg!) {
    byId.set(l.id, l)
    const led = out.get(l.account)!
    led.postgres.count++
    led.postgres.sum += l.amount
  }
  for (const l of streams.flat()) {
    const led = out.get(l.account)!
    led.outbox.count++
    led.outbox.sum += l.amount
    const seen = byId.get(l.id)
    if (seen) seen.in = 'both'
    else byId.set(l.id, l)
  }
  for (const l of byId.values()) {
    const led = out.get(l.account)!
    led.lines.push(l)
    led.sum += l.amount
  }
  for (const led of out.values()) led.lines.sort((x, y) => x.at - y.at || x.id.localeCompare(y.id))
  return out
}

export async function accountLedger(ctx: RedisContext, db: Database, account: string): Promise<AccountLedger> {
  return (await accountLedgers(ctx, db, [account])).get(account)!
}

/**
 * The account's metered micro-credit remainder as its newest settle left it (0 before any): the
 * settle entry with the greatest stream id, the order the shard's scripts wrote them in (an
 * account's entries all go to its shard's stream; `at` is the app's clock and two settles can share
 * a millisecond). A settle batch's filed calls share one stream id (`packed_charged_calls`): each
 * of an account's debits there posts a balance no higher than the one before, and one of the same
 * balance (charged 0) a remainder no lower, so the newest is the lowest balance, then the highest remainder.
 */
export function lastRemainder(led: AccountLedger): number {
  let best: LedgerLine | null = null
  for (const l of led.lines) {
    if (l.remainder === null) continue
    const o = best ? streamOrder(l.streamId, best.streamId) || best.balanceAfter - l.balanceAfter || l.remainder - best.remainder! : 1
    if (o > 0) best = l
  }
  return best?.remainder ?? 0
}

/** Compares two stream ids `<ms>-<seq>` as Redis orders them. */
function streamOrder(a: string, b: string): number {
  const [am, as] = a.split('-').map(Number) as [number, number]
  const [bm, bs] = b.split('-').map(Number) as [number, number]
  return am - bm || as - bs
}
