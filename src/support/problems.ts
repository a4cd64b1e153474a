/**
 * Structured support problems: filed by an account (owner or agent token), read back at the
 * status_url by that account only, moved forward by the founder (open → acknowledged → resolved,
 * with optional notes). Not money, so written straight to Postgres.
 * errors: NOT_FOUND (unknown id or another account's), CONFLICT (a move backwards, or nothing new).
 */
import { and, asc, desc, eq, gt, inArray, sql } from 'drizzle-orm'
import { randomId } from '../auth/tokens'
import type { Principal } from '../auth/principal'
import type { Database } from '../db/client'
import { supportProblems, supportUpdates } from '../db/schema'
import { ApiError } from '../errors'
import type { Services } from '../services'
import { persistEvents } from '../events/store'

/** A problem's states, moved by the founder (PATCH /admin/support/{id}). */
export const STATUSES = ['open', 'acknowledged', 'resolved'] as const

type Status = (typeof STATUSES)[number]

export interface NewProblem {
  category: string
  slug?: string
  call_id?: string
  error_code?: string
  http_status?: number
  summary: string
}

/** Problems an account may file in any 24 h: a runaway agent or a leaked token cannot fill the founder's queue. */
export const MAX_PROBLEMS_PER_DAY = 20
const DAY_MS = 24 * 3600_000

export async function fileProblem(s: Services, p: Principal, body: NewProblem) {
  const id = 'sup_' + randomId()
  const now = new Date(s.ctx.clock.now())
  // Counted and inserted under the account's transaction-scoped lock, so concurrent filings cannot all pass the count.
  await s.db.db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${'support:' + p.accountId}))`)
    const recent = await tx
      .select({ at: supportProblems.createdAt })
      .from(supportProblems)
      .where(and(eq(supportProblems.accountId, p.accountId), gt(supportProblems.createdAt, new Date(now.getTime() - DAY_MS))))
      .orderBy(asc(supportProblems.createdAt))
    if (recent.length >= MAX_PROBLEMS_PER_DAY) {
      const retry = Math.max(1, Math.ceil((recent[recent.length - MAX_PROBLEMS_PER_DAY]!.at.getTime() + DAY_MS - now.getTime()) / 1000))
      throw new ApiError('RATE_LIMITED', { retry_after_s: retry, reason: `at most ${MAX_PROBLEMS_PER_DAY} support problems per account in 24 hours` }, { 'retry-after': String(retry) })
    }
    await tx.insert(supportProblems).values({
    id,
    accountId: p.accountId,
    agentId: p.agentId,
    category: body.category,
    slug: body.slug ?? null,
    callId: body.call_id ?? null,
    errorCode: body.error_code ?? null,
    httpStatus: body.http_status ?? null,
    summary: body.summary,
    status: 'open',
    createdAt: now,
    updatedAt: now,
    })
  })
  return { id, status: 'open' as const, status_url: `${s.cfg.BASE_URL}/v1/support/${id}` }
}

/**
 * The problem as its status_url shows it; `accountId` null = the founder's view. `reach` (an agent
 * token's subtree, docs/api.md §8) limits it to problems that subtree filed; null = the whole account.
 */
export async function problemView(db: Database, id: string, accountId: string | null, reach: ReadonlySet<string> | null = null) {
  const mine = accountId === null ? eq(supportProblems.id, id) : and(eq(supportProblems.id, id), eq(supportProblems.accountId, accountId))
  const where = reach === null ? mine : and(mine, reach.size ? inArray(supportProblems.agentId, [...reach]) : sql`false`)
  const [row] = await db.select().from(supportProblems).where(where)
  if (!row) throw new ApiError('NOT_FOUND', { resource: 'support problem' })
  const updates = await db.select().from(supportUpdates).where(eq(supportUpdates.problemId, id)).orderBy(asc(supportUpdates.id))
  return {
    id: row.id,
    status: row.status,
    category: row.category,
    slug: row.slug,
    call_id: row.callId,
    error_code: row.errorCode,
    http_status: row.httpStatus,
    summary: row.summary,
    created_at: row.createdAt.toISOString(),
    updates: updates.map((u) => ({ status: u.status, note: u.note, at: u.at.toISOString() })),
  }
}

const rank = (st: string) => STATUSES.indexOf(st as Status)

/** The founder's move: forward only; a note alone is allowed, an empty repeat is not. The owner's `support.updated` event is written in the same transaction. */
export async function moveProblem(s: Services, id: string, patch: { status?: string; note?: string }) {
  const now = new Date(s.ctx.clock.now())
  await s.db.db.transaction(async (tx) => {
    const [row] = await tx
      .select({ status: supportProblems.status, accountId: supportProblems.accountId })
      .from(supportProblems)
      .where(eq(supportProblems.id, id))
      .for('update')
    if (!row) throw new ApiError('NOT_FOUND', { resource: 'support problem' })
    const next = patch.status ?? row.status
    if (rank(next) < rank(row.status))
      throw new ApiError('CONFLICT', { reason: `the problem is ${row.status}; it only moves forward (open → acknowledged → resolved)` })
    if (next === row.status && patch.note === undefined) throw new ApiError('CONFLICT', { reason: `the problem is already ${row.status}` })
    // A repeat of the last update (a retry whose reply was lost) is not a new update: no second note, no second event.
    if (next === row.status) {
      const [last] = await tx
        .select({ status: supportUpdates.status, note: supportUpdates.note })
        .from(supportUpdates)
        .where(eq(supportUpdates.problemId, id))
        .orderBy(desc(supportUpdates.id))
        .limit(1)
      if (last && last.status === next && last.note === patch.note)
        throw new ApiError('CONFLICT', { reason: `the problem's last update already says this (${next}, the same note)` })
    }
    await tx.update(supportProblems).set({ status: next, updatedAt: now }).where(eq(supportProblems.id, id))
    const [update] = await tx.insert(supportUpdates).values({ problemId: id, status: next, note: patch.note ?? null, at: now }).returning({ seq: supportUpdates.id })
    await persistEvents(tx as unknown as Database, [
      {
        id: `evt_${id}_u${update!.seq}`,
        accountId: row.accountId,
        type: 'support.updated',
        at: now.getTime(),
        data: { problem_id: id, status: next, note: patch.note ?? null, status_url: `${s.cfg.BASE_URL}/v1/support/${id}` },
      },
    ])
  })
  s.deliveries.poke()
  return problemView(s.db.db, id, null)
}
