/**
 * The ledger invariants every cluster and fault test ends with, read from the real stores:
 *   - balance ≥ 0, and the Redis posted balance (balance + held) = Σ of the account's entries
 *     (Postgres ∪ outbox);
 *   - after the flush: no money entry left in the outbox, Postgres holds each entry exactly once
 *     (one debit and at most one refund per call) and sums to the same balance;
 *   - no credit lost or doubled: every debit a client saw acknowledged is there, once, and not
 *     refunded; every call answered "refunded" has exactly one debit and one refund.
 */
import { expect } from 'bun:test'
import { sql } from 'drizzle-orm'
import type { Database } from '../../src/db/client'
import type { RedisContext } from '../../src/redis/context'
import type { Flusher } from '../../src/write-behind/flusher'
import { accountLedgers, type AccountLedger } from '../../src/recovery/reconcile'

export interface Expectation {
  account: string
  /** The exact final balance, when the test knows it. */
  balance?: number
  /** Call ids answered 200: charged once, never refunded. */
  debits?: string[]
  /** Call ids answered with `refunded: true`: one debit, one refund. */
  refunded?: string[]
}

export interface LedgerStores {
  ctx: RedisContext
  db: { db: Database }
  flusher: Flusher
}

/**
 * Each account's posted balance in Redis: its balance plus what its metered calls in flight hold
 * (`held`, lua/debit.lua), the balance its entries sum to. Both parts are checked ≥ 0.
 */
async function redisBalances(ctx: RedisContext, accounts: string[]): Promise<Map<string, number>> {
  const vals = await Promise.all(accounts.map((a) => ctx.redis.hmget(ctx.keys.account(a), 'balance', 'held')))
  for (const [i, [balance, held]] of vals.entries()) {
    expect(Number(balance), `${accounts[i]}: balance ≥ 0`).toBeGreaterThanOrEqual(0)
    expect(Number(held ?? 0), `${accounts[i]}: held ≥ 0`).toBeGreaterThanOrEqual(0)
  }
  return new Map(accounts.map((a, i) => [a, Number(vals[i]![0]) + Number(vals[i]![1] ?? 0)]))
}

function checkSums(ledgers: Map<string, AccountLedger>, balances: Map<string, number>): void {
  for (const [a, led] of ledgers) expect(led.sum, `${a}: Redis posted balance = Σ entries (Postgres ∪ outbox)`).toBe(balances.get(a)!)
}

/** Drains the outbox with the given flusher (it must not be running its own loop). */
export async function drain(flusher: Flusher): Promise<void> {
  await flusher.ensureGroups()
  for (let i = 0; i < 500; i++) if ((await flusher.flushOnce()) === 0) return
  throw new Error('outbox did not drain')
}

export interface LedgerOptions {
  /** Drain the outbox first (default true). */
  flush?: boolean
  /** Acknowledged debits and refunded calls of any of the accounts (load tests do not track which). */
  debits?: string[]
  refunded?: string[]
}

export async function assertLedger(stores: LedgerStores, expectations: Expectation[], opt: LedgerOptions = {}): Promise<Map<string, AccountLedger>> {
  const { ctx, db, flusher } = stores
  const accounts = expectations.map((e) => e.account)
  checkSums(await accountLedgers(ctx, db.db, accounts), await redisBalances(ctx, accounts))
  if (opt.flush !== false) await drain(flusher)

  const ledgers = await accountLedgers(ctx, db.db, accounts)
  const balances = await redisBalances(ctx, accounts)
  checkSums(ledgers, balances)
  const all = new Map<string, { debit: number; refund: number }>()
  for (const e of expectations) {
    const led = ledgers.get(e.account)!
    expect(led.outbox.count, `${e.account}: money entries left in the outbox after the flush`).toBe(0)
    expect(led.postgres.sum, `${e.account}: Postgres Σ = Redis balance`).toBe(balances.get(e.account)!)
    if (e.balance !== undefined) expect(balances.get(e.account), `${e.account}: final balance`).toBe(e.balance)
    // Each call at most one debit and one refund; every refund names a debit that is there.
    const per = new Map<string, { debit: number; refund: number }>()
    for (const l of led.lines) {
      if (!l.callId || (l.kind !== 'debit' && l.kind !== 'refund')) continue
      const c = per.get(l.callId) ?? { debit: 0, refund: 0 }
      c[l.kind]++
      per.set(l.callId, c)
      all.set(l.callId, c)
    }
    for (const [call, c] of per) {
      expect(c.debit, `${call}: debits`).toBe(1)
      expect(c.refund, `${call}: refunds`).toBeLessThanOrEqual(1)
    }
    for (const call of e.debits ?? []) expect(per.get(call), `acknowledged debit ${call}`).toEqual({ debit: 1, refund: 0 })
    for (const call of e.refunded ?? []) expect(per.get(call), `refunded call ${call}`).toEqual({ debit: 1, refund: 1 })
  }
  for (const call of opt.debits ?? []) expect(all.get(call), `acknowledged debit ${call}`).toEqual({ debit: 1, refund: 0 })
  for (const call of opt.refunded ?? []) expect(all.get(call), `refunded call ${call}`).toEqual({ debit: 1, refund: 1 })
  // The id is the primary key, but a second row for the same money movement under another id
  // would still double a credit: no (call, kind) pair may repeat across the whole table.
  const dup = await db.db.execute(sql`select call_id, kind, count(*)::int as n from ledger_entries where call_id is not null and kind in ('debit','refund') group by call_id, kind having count(*) > 1 limit 5`)
  expect([...(dup as unknown as unknown[])], 'duplicate debit/refund rows in Postgres').toEqual([])
  return ledgers
}
