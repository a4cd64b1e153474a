/**
 * Balance and activity of an account. Activity merges the newest calls still in Redis with the
 * older ones Postgres holds, newest first, paged by an opaque cursor; with Postgres down it still
 * serves what Redis has.
 * errors: BAD_REQUEST (cursor).
 */
import { and, eq, inArray, isNull, lte, sql } from 'drizzle-orm'
import { calls } from '../db/schema'
import { ApiError } from '../errors'
import { recentCalls, type CallRecord } from '../paid-request/calls'
import { windowsAt } from '../windows'
import type { Services } from '../services'
import { accountLinks } from '../payments/payment-required'
import type { CallOutcome } from '../paid-request/outcome'
import { readAccount } from '../redis/account-hash'
import { withCacheWrites } from '../metering/usage'
import type { Principal } from '../auth/principal'
import { subtreeOf } from '../governance/agents'
import { applyRaises } from '../governance/raises'

/** The most calls one page of /v1/activity returns. */
export const ACTIVITY_MAX_LIMIT = 200

export async function balanceOf(s: Services, accountId: string) {
  const { redis, keys } = s.ctx
  const w = windowsAt(s.ctx.clock.now())
  const [a, spent] = await Promise.all([readAccount(s.ctx, accountId, 'balance', 'held', 'daily_cap', 'balance_cap', 'mref', 'raises'), redis.get(keys.spentToday(accountId, w.day))])
  const mref = a.mref
  // The cap in force: a temporary raise's base from its lapse on (docs/api.md §13b).
  const cap = applyRaises(a.raises, s.ctx.clock.now(), { daily_cap: a.daily_cap === null ? null : String(a.daily_cap) }).fields.daily_cap
  return {
    balance: a.balance ?? 0,
    // Metered calls' reservations still open (docs/api.md §7): each is charged or released when its
    // call settles. The ledger's entries (the statement's balance_after) sum to balance + held.
    held: a.held ?? 0,
    balance_cap: a.balance_cap ?? s.cfg.DEFAULT_BALANCE_CAP,
    daily_cap: cap === null || cap === undefined ? s.cfg.DEFAULT_DAILY_CAP : Number(cap),
    spent_today: Number(spent ?? 0),
    resets_at: w.resetsAt,
    links: accountLinks(s, mref ?? ''),
  }
}

interface Cursor {
  at: string
  id: string
}

const newestFirst = (a: CallRecord, b: CallRecord) => (a.at === b.at ? (a.call_id < b.call_id ? 1 : -1) : a.at < b.at ? 1 : -1)
const before = (r: CallRecord, c: Cursor | null) => !c || r.at < c.at || (r.at === c.at && r.call_id < c.id)

/**
 * Only a cursor this service writes: `at` as toISOString() writes it (so Redis' text comparison and
 * Postgres' time comparison agree, and Postgres can hold it) and a call id of printable ASCII. A
 * forged one is BAD_REQUEST, never a Postgres query that fails into a page saying the history ended.
 */
function decodeCursor(raw: string | undefined): Cursor | null {
  if (!raw) return null
  try {
    const c = JSON.parse(Buffer.from(raw, 'base64url').toString()) as Cursor
    if (typeof c.at === 'string' && typeof c.id === 'string' && /^[\x21-\x7e]{1,200}$/.test(c.id) && /^[12]\d{3}-/.test(c.at) && new Date(c.at).toISOString() === c.at) return c
  } catch {}
  throw new ApiError('BAD_REQUEST', { field: 'cursor', expected: 'the next_cursor of a previous page' })
}

/**
 * Call ids compared byte by byte, as JavaScript compares the ASCII ids of Redis' recent calls: under
 * a language collation (a Postgres initialised with en_US.UTF-8) `call_B…` sorts after `call_a…`,
 * and a page boundary inside one millisecond would repeat some calls and skip others.
 */
const callIdBytes = sql`${calls.callId} collate "C"`

/** Narrows activity to one agent (`_owner`: the owner token's own calls), route or slug, outcome. */
export interface ActivityFilter {
  agent?: string
  slug?: string
  outcome?: string
}

/**
 * Whose calls a caller sees: the owner all of the account's (null); an agent token its own and its
 * descendants' (docs/api.md §8: an agent sees only its own subtree), never its parent's, its
 * siblings' or the owner token's — a sub-agent handed to another worker reads no more of the fleet
 * than it could spend as.
 */
export type Reach = ReadonlySet<string> | null

export async function reachOf(s: Services, principal: Pick<Principal, 'accountId' | 'agentId'>): Promise<Reach> {
  return principal.agentId === null ? null : subtreeOf(s.ctx, principal.accountId, principal.agentId)
}

const matches = (r: CallRecord, f: ActivityFilter, reach: Reach) =>
  (!f.agent || (r.agent_id ?? '_owner') === f.agent) &&
  (!f.slug || r.slug === f.slug) &&
  (!f.outcome || r.outcome === f.outcome) &&
  (reach === null || (r.agent_id !== null && reach.has(r.agent_id)))

export async function activityOf(s: Services, accountId: string, rawLimit: string | undefined, rawCursor: string | undefined, filter: ActivityFilter = {}, reach: Reach = null) {
  const limit = rawLimit === undefined ? 50 : Number(rawLimit)
  if (!Number.isInteger(limit) || limit < 1 || limit > ACTIVITY_MAX_LIMIT)
    throw new ApiError('BAD_REQUEST', { field: 'limit', expected: `an integer from 1 to ${ACTIVITY_MAX_LIMIT}` })
  const cursor = decodeCursor(rawCursor)
  const [{ balance: bal }, recent] = await Promise.all([readAccount(s.ctx, accountId, 'balance'), recentCalls(s.ctx, accountId)])
  const merged = new Map<string, CallRecord>()
  for (const r of recent) if (before(r, cursor) && matches(r, filter, reach)) merged.set(r.call_id, r)
  try {
    const older = await s.db.db
      .select()
      .from(calls)
      .where(
        and(
          eq(calls.accountId, accountId),
          reach === null ? undefined : inArray(calls.agentId, [...reach]),
          filter.agent ? (filter.agent === '_owner' ? isNull(calls.agentId) : eq(calls.agentId, filter.agent)) : undefined,
          filter.slug ? eq(calls.slug, filter.slug) : undefined,
          // Any word may be asked for; one outside the outcome table simply matches no row.
          filter.outcome ? eq(calls.outcome, filter.outcome as CallOutcome) : undefined,
          // `at <=` alone bounds the index range; the pair decides within the cursor's millisecond.
          cursor ? and(lte(calls.at, new Date(cursor.at)), sql`(${calls.at}, ${callIdBytes}) < (${cursor.at}::timestamptz, ${cursor.id})`) : undefined,
        ),
      )
      .orderBy(sql`${calls.at} desc`, sql`${callIdBytes} desc`)
      .limit(limit + 1)
    for (const r of older) if (!merged.has(r.callId)) merged.set(r.callId, recordOfRow(r))
  } catch (e) {
    s.log.warn('activity_postgres_unavailable', { error: String(e) })
  }
  const page = [...merged.values()].sort(newestFirst)
  const items = page.slice(0, limit)
  const last = items[items.length - 1]
  const next = page.length > limit && last ? Buffer.from(JSON.stringify({ at: last.at, id: last.call_id })).toString('base64url') : null
  return { balance: Number(bal ?? 0), calls: items.map(activityRow), next_cursor: next }
}

/**
 * What a call cost in the end (0 once refunded) and what its debit took when it started: one
 * meaning of `charged` for the list, the call's own record, MCP and the console (docs/api.md §5, §7).
 */
const chargesOf = (r: CallRecord) => ({ reserved: r.reserved ?? r.charged, charged: r.refunded ? 0 : r.charged })

/** An activity row: the list's fields, a metered call's model and tokens (null for a flat one). */
const activityRow = (r: CallRecord) => {
  const { reserved: _r, uncharged: _u, usage_source: _s, lane: _l, ...row } = r
  return { ...row, ...chargesOf(r), model: r.model ?? null, tokens: r.tokens ?? null }
}

function recordOfRow(r: typeof calls.$inferSelect): CallRecord {
  return {
    call_id: r.callId,
    slug: r.slug,
    agent_id: r.agentId,
    charged: r.charged,
    refunded: r.refunded === 1,
    outcome: r.outcome as CallOutcome,
    http_status: r.httpStatus,
    latency_ms: r.latencyMs,
    at: r.at.toISOString(),
    model: r.model,
    tokens:
      r.tokensIn === null
        ? null
        : withCacheWrites({ input: r.tokensIn, cached: r.tokensCached ?? 0, output: r.tokensOut ?? 0 }, r.tokensCacheWrite ?? 0, r.tokensCacheWrite1h ?? 0),
    ...(r.reserved !== null ? { reserved: r.reserved, uncharged: r.uncharged ?? 0, usage_source: r.usageSource as CallRecord['usage_source'] } : {}),
  }
}

/**
 * One call of the account (GET /v1/activity/{call_id}): from Redis while it is recent, else from
 * Postgres. Another account's call, or one not filed yet, is NOT_FOUND.
 */
export async function callOf(s: Services, accountId: string, callId: string, reach: Reach = null) {
  let rec = (await recentCalls(s.ctx, accountId)).find((r) => r.call_id === callId)
  if (!rec) {
    const [row] = await s.db.db
      .select()
      .from(calls)
      .where(and(eq(calls.accountId, accountId), eq(calls.callId, callId)))
      .limit(1)
    if (row) rec = recordOfRow(row)
  }
  // Outside the caller's reach it is answered as another account's call is.
  if (!rec || (reach !== null && (rec.agent_id === null || !reach.has(rec.agent_id)))) throw new ApiError('NOT_FOUND', { resource: 'call' })
  const proxied = rec.slug.startsWith('proxy:')
  return {
    call_id: rec.call_id,
    ...(proxied ? { route: rec.slug } : { slug: rec.slug }),
    agent_id: rec.agent_id,
    model: rec.model ?? null,
    tokens: rec.tokens ?? null,
    ...chargesOf(rec),
    uncharged: rec.uncharged ?? 0,
    usage_source: rec.usage_source ?? null,
    outcome: rec.outcome,
    http_status: rec.http_status,
    latency_ms: rec.latency_ms,
    at: rec.at,
  }
}
