/**
 * Our side of one provider's bill for one UTC day (docs/api.md §13d), from the calls Postgres holds:
 * the house lane only (the owner's lane is on the owner's own provider account), the tokens each
 * metered call was settled with, by model; and apart, the house-lane requests on routes we do not
 * meter (the operator's `house.allow` openings, flat-priced or unpriced), which reach the provider's
 * bill with no token count of ours. A refunded call carries no tokens (the provider was not paid
 * for a failure), so it adds nothing.
 */
import { and, count, eq, gte, inArray, isNotNull, isNull, lt, sql } from 'drizzle-orm'
import type { Database } from '../db/client'
import { calls } from '../db/schema'
import type { BillTokens } from './tokens'

export interface OurSide {
  tokens: Map<string, BillTokens>
  unmeteredRequests: number
}

const total = (col: unknown) => sql<string>`coalesce(sum(${col}), 0)::bigint`

/** `slugs`: what the provider's calls are filed under: `proxy:<id>` and its capabilities' slugs. */
export async function ourSide(db: Database, slugs: string[], startS: number, endS: number): Promise<OurSide> {
  const scope = and(eq(calls.lane, 'house'), inArray(calls.slug, slugs), gte(calls.at, new Date(startS * 1000)), lt(calls.at, new Date(endS * 1000)))
  const [metered, unmetered] = await Promise.all([
    db
      .select({
        model: calls.model,
        input: total(sql`${calls.tokensIn} + coalesce(${calls.tokensCacheWrite}, 0) + coalesce(${calls.tokensCacheWrite1h}, 0)`),
        cached: total(calls.tokensCached),
        output: total(calls.tokensOut),
      })
      .from(calls)
      .where(and(scope, isNotNull(calls.model), isNotNull(calls.tokensIn)))
      .groupBy(calls.model),
    db.select({ n: count() }).from(calls).where(and(scope, isNull(calls.model), eq(calls.refunded, 0))),
  ])
  const tokens = new Map<string, BillTokens>()
  for (const r of metered) tokens.set(r.model!, { input: Number(r.input), cached: Number(r.cached), output: Number(r.output) })
  return { tokens, unmeteredRequests: Number(unmetered[0]?.n ?? 0) }
}
