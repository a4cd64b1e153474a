/**
 * Persists owner events and schedules their deliveries, inside the caller's Postgres transaction
 * (the flusher's, for events that came through the outbox; the state change's own, for events of
 * Postgres-only state such as support problems). An event id already stored inserts nothing and
 * schedules nothing, so a redelivered outbox entry cannot deliver twice.
 *
 * Deliveries fan out at this moment to what the account has then: its webhook endpoint, if it
 * wants the type, and every chat linked to it.
 */
import { sql } from 'drizzle-orm'
import type { Database } from '../db/client'
import { events } from '../db/schema'
import type { OwnerEvent } from './types'

export async function persistEvents(tx: Database, list: OwnerEvent[]): Promise<void> {
  if (list.length === 0) return
  const inserted = await tx
    .insert(events)
    .values(list.map((e) => ({ id: e.id, accountId: e.accountId, type: e.type, data: e.data, at: new Date(e.at) })))
    .onConflictDoNothing({ target: events.id })
    .returning({ id: events.id })
  if (inserted.length === 0) return
  const ids = sql.join(
    inserted.map((r) => sql`${r.id}`),
    sql`, `,
  )
  // A new delivery is due at once: next_attempt_at = the event's time, on the app clock.
  await tx.execute(sql`
    insert into event_deliveries (event_id, account_id, channel, target, status, attempts, next_attempt_at, created_at)
    select e.id, e.account_id, 'webhook', '', 'pending', 0, e.at, e.at
      from events e join webhook_endpoints w on w.account_id = e.account_id
     where e.id in (${ids}) and (w.events is null or e.type = any(w.events))
    union all
    select distinct e.id, e.account_id, 'telegram', c.chat_id, 'pending', 0, e.at, e.at
      from events e join operator_chats c on c.account_id = e.account_id
     where e.id in (${ids})
    on conflict do nothing`)
}
