/**
 * Ledger invariants, read from the real stores: balance ≥ 0 and the posted balance (balance + held)
 * = Σ credits − Σ debits of the account's entries — in Redis (the outbox stream, before the flusher acks it) and in Postgres
 * (after the flush), each entry exactly once.
 */
import { eq, sql } from 'drizzle-orm'
import { ledgerEntries } from '../../src/db/schema'
import { MONEY_KINDS, scanOutbox } from '../../src/write-behind/outbox'
import { parseCallRecord } from '../../src/paid-request/call-record'
import type { TestApp } from './harness'

export interface StreamEntry {
  id: string
  kind: string
  acct: string
  amount: number
  bal: number
}

const MONEY = new Set<string>(MONEY_KINDS)

/**
 * Money entries of an account still in its shard's outbox stream (unflushed), read through the one
 * parser (src/ledger/outbox.ts), so a refund folded into a call entry counts as the entry it is.
 */
export async function outboxMoney(t: TestApp, acct: string): Promise<StreamEntry[]> {
  const keys = t.s.ctx.keys
  const out: StreamEntry[] = []
  for await (const e of scanOutbox(t.s.ctx, keys.shardOf(acct))) {
    const o = e.fields
    if (MONEY.has(e.kind) && o.acct === acct) out.push({ id: o.id!, kind: e.kind, acct: o.acct!, amount: Number(o.amount), bal: Number(o.bal) })
  }
  return out
}

export async function redisBalance(t: TestApp, acct: string): Promise<number> {
  return Number(await t.s.ctx.redis.hget(t.s.ctx.keys.account(acct), 'balance'))
}

export async function pgLedger(t: TestApp, acct: string) {
  const rows = await t.s.db.db
    .select({ n: sql<number>`count(*)::int`, distinct: sql<number>`count(distinct ${ledgerEntries.id})::int`, sum: sql<number>`coalesce(sum(${ledgerEntries.amount}),0)::bigint` })
    .from(ledgerEntries)
    .where(eq(ledgerEntries.accountId, acct))
  return { count: Number(rows[0]!.n), distinct: Number(rows[0]!.distinct), sum: Number(rows[0]!.sum) }
}

/**
 * Asserts the Redis-side invariant: balance ≥ 0, held ≥ 0, and the posted balance (balance + what
 * metered calls in flight hold, lua/debit.lua) = Σ entries. Returns the entries for further checks.
 */
export async function checkRedisInvariant(t: TestApp, acct: string): Promise<StreamEntry[]> {
  const entries = await outboxMoney(t, acct)
  const [balance, held] = (await t.s.ctx.redis.hmget(t.s.ctx.keys.account(acct), 'balance', 'held')).map(Number)
  const sum = entries.reduce((a, e) => a + e.amount, 0)
  if (balance! < 0) throw new Error(`balance ${balance} < 0`)
  if (held! < 0) throw new Error(`held ${held} < 0`)
  if (balance! + held! !== sum) throw new Error(`posted balance ${balance} + held ${held} ≠ Σ entries ${sum}`)
  const ids = new Set(entries.map((e) => e.id))
  if (ids.size !== entries.length) throw new Error('duplicate entry ids in the outbox')
  return entries
}

/** Runs the flusher until the outbox is empty. */
export async function flushAll(t: TestApp): Promise<void> {
  await t.s.flusher.ensureGroups()
  for (let i = 0; i < 100; i++) if ((await t.s.flusher.flushOnce()) === 0) return
  throw new Error('outbox did not drain')
}

/**
 * A call record as Redis holds it, whatever its shape (lua/debit.lua): the common call's is a string
 * (a flat call's state|price|day|at|agent|chain|brk|target, a metered call's m|metered|state|…),
 * any other a hash; null when there is none.
 */
export async function callRecord(redis: Pick<TestApp['redis'], 'type' | 'get' | 'hgetall'>, key: string): Promise<string | Record<string, string> | null> {
  const type = await redis.type(key)
  return type === 'string' ? redis.get(key) : type === 'hash' ? redis.hgetall(key) : null
}

/**
 * A call record's fields by the hash's names, whatever its shape (src/paid-request/call-record.ts):
 * `{ state: 'filed' }` for the bare word `filed`; null when there is none.
 */
export async function callFields(redis: Pick<TestApp['redis'], 'type' | 'getBuffer' | 'hgetall'>, key: string): Promise<Record<string, string> | null> {
  const type = await redis.type(key)
  if (type === 'hash') return redis.hgetall(key)
  if (type !== 'string') return null
  const fields = parseCallRecord((await redis.getBuffer(key))!)
  if (fields === null) throw new Error(`${key}: a string no debit writes`)
  return fields === 'filed' ? { state: 'filed' } : fields
}

/**
 * A call record rewritten as the hash a debit wrote before the string (its fields, its TTL), less
 * the fields `drop` names: a record of an older debit (e.g. one from before the hold, no `hold`).
 */
export async function asHashRecord(redis: Pick<TestApp['redis'], 'type' | 'getBuffer' | 'hgetall' | 'ttl' | 'del' | 'hset' | 'expire'>, key: string, drop: string[] = []): Promise<void> {
  const fields = await callFields(redis, key)
  if (!fields) throw new Error(`${key}: no call record`)
  for (const f of drop) delete fields[f]
  const ttl = await redis.ttl(key)
  await redis.del(key)
  await redis.hset(key, fields)
  if (ttl > 0) await redis.expire(key, ttl)
}
