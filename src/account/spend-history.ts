/**
 * Where the money went, from the durable ledger (Postgres, written behind Redis by the flusher):
 * spend per HKT day and the top agents and routes of the last days. Spend = debits less their
 * refunds, so a refunded provider failure costs nothing here either. A refund counts at its
 * debit's instant, as the daily spend window counts it (refund.lua and settle.lua lower the debit's
 * day): a call debited before midnight and refunded (or settled) after it moves neither day.
 */
import { sql } from 'drizzle-orm'
import type { Database } from '../db/client'
import { hktDay } from '../clock'
import { rowsOf } from '../db/rows'

const DAY_MS = 86_400_000
const HKT_OFFSET_MS = 8 * 3600 * 1000

export interface DaySpend {
  /** The HKT calendar day, YYYY-MM-DD. */
  day: string
  credits: number
}

export interface TopSpender {
  /** Agent id (null = the owner token's own calls) or route/slug. */
  name: string | null
  credits: number
}

export interface SpendHistory {
  days: DaySpend[]
  topAgents: TopSpender[]
  topRoutes: TopSpender[]
}

/** The HKT calendar date of an HKT day number. */
export const hktDate = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10)

/** The last `days` HKT days up to today's (oldest first, zero-spend days included) and the top spenders. */
export async function spendHistory(db: Database, accountId: string, now: number, days = 30, top = 5): Promise<SpendHistory> {
  const today = hktDay(now)
  const firstDay = today - days + 1
  const since = new Date(firstDay * DAY_MS - HKT_OFFSET_MS).toISOString()
  const spent = sql`-sum(e.amount)::bigint`
  // `spent_at`: a refund's debit's instant (the entry its ref_id names); a debit's own. A refund
  // is never before its debit, so `e.at` still bounds the index scan.
  const entries = sql`ledger_entries e left join ledger_entries d on e.kind = 'refund' and d.id = e.ref_id`
  const spentAt = sql`coalesce(d.at, e.at)`
  const scope = sql`e.account_id = ${accountId} and e.kind in ('debit', 'refund') and e.at >= ${since}::timestamptz and ${spentAt} >= ${since}::timestamptz`
  const [perDay, agents, routes] = await Promise.all([
    db.execute(sql`select floor((extract(epoch from ${spentAt}) * 1000 + ${HKT_OFFSET_MS}) / ${DAY_MS})::int as d, ${spent} as c from ${entries} where ${scope} group by 1`),
    db.execute(sql`select e.agent_id as n, ${spent} as c from ${entries} where ${scope} group by 1 having -sum(e.amount) > 0 order by 2 desc, 1 limit ${top}`),
    db.execute(sql`select e.target as n, ${spent} as c from ${entries} where ${scope} group by 1 having -sum(e.amount) > 0 order by 2 desc, 1 limit ${top}`),
  ])
  const byDay = new Map(rowsOf<{ d: number; c: string | number }>(perDay).map((r) => [Number(r.d), Number(r.c)]))
  const spenders = (r: unknown) => rowsOf<{ n: string | null; c: string | number }>(r).map((x) => ({ name: x.n, credits: Number(x.c) }))
  return {
    days: Array.from({ length: days }, (_, i) => ({ day: hktDate(firstDay + i), credits: Math.max(0, byDay.get(firstDay + i) ?? 0) })),
    topAgents: spenders(agents),
    topRoutes: spenders(routes),
  }
}
