/**
 * The flusher's sink of `event` outbox entries: each becomes an `events` row and its deliveries,
 * in the flusher's transaction (so the entry is acked only once both are committed).
 * A malformed entry is stored as best it can be, never thrown: a sink that throws would hold
 * every later entry of the outbox back.
 */
import { nextHktMidnight } from '../clock'
import type { Database } from '../db/client'
import type { OutboxEntry } from '../write-behind/outbox'
import { persistEvents } from './store'
import type { EventType, OwnerEvent } from './types'

function parseData(raw: string | undefined): Record<string, unknown> {
  try {
    const v = JSON.parse(raw ?? '{}') as unknown
    // cjson encodes an empty Lua table as [] (it cannot tell an empty object from an empty array).
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {}
  } catch {
    return { raw }
  }
}

/** Entries from Lua carry what Lua can compute; the rest (ISO times) is filled in here. */
function complete(type: string, data: Record<string, unknown>, at: number): Record<string, unknown> {
  if (type === 'cap.reached') {
    const { day: _day, ...rest } = data
    return { ...rest, resets_at: new Date(nextHktMidnight(at)).toISOString() }
  }
  // A budget is lifetime: it never resets.
  if (type === 'cap.threshold') return { ...data, resets_at: data.cap_kind === 'daily_cap' ? new Date(nextHktMidnight(at)).toISOString() : null }
  return data
}

export function eventOfEntry({ fields: f }: OutboxEntry): OwnerEvent {
  const at = Number(f.at) || 0
  const type = f.type ?? 'unknown'
  return { id: f.id!, accountId: f.acct!, type: type as EventType, at, data: complete(type, parseData(f.data), at) as never }
}

export async function eventSink(tx: Database, entries: OutboxEntry[]): Promise<void> {
  await persistEvents(tx, entries.filter((e) => e.fields.id && e.fields.acct).map(eventOfEntry))
}
