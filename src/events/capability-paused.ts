/**
 * `capability.paused` for the owners it concerns: the accounts that called the capability in the
 * last 7 days (a pause is global; telling every account would be noise). The events are written
 * in one Postgres transaction with their deliveries.
 */
import { and, eq, gt } from 'drizzle-orm'
import { randomId } from '../auth/tokens'
import type { Clock } from '../clock'
import type { Database } from '../db/client'
import { calls } from '../db/schema'
import { persistEvents } from './store'

const RECENT_MS = 7 * 86400_000

export async function notifyCapabilityPaused(db: Database, clock: Clock, slug: string, reason: 'founder' | 'spend_alarm'): Promise<number> {
  const at = clock.now()
  return db.transaction(async (tx) => {
    const users = await tx
      .selectDistinct({ accountId: calls.accountId })
      .from(calls)
      .where(and(eq(calls.slug, slug), gt(calls.at, new Date(at - RECENT_MS))))
    await persistEvents(
      tx as unknown as Database,
      users.map((u) => ({ id: `evt_${randomId()}`, accountId: u.accountId, type: 'capability.paused' as const, at, data: { slug, reason } })),
    )
    return users.length
  })
}
