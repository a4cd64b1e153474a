/**
 * The owner events: one typed event per thing an account owner must hear about. An event is born
 * next to its state change — in the same Lua script as an `event` entry on the account's outbox
 * stream, or in the same Postgres transaction — so it is never lost, then persisted to `events`
 * and delivered to the account's webhook endpoint and linked chats (src/events/deliveries.ts).
 *
 * Outbox entry of an event (what a Lua script XADDs, what emitEvent() writes):
 *   kind  'event'
 *   id    a unique event id fixed before the write (`evt_…`); a redelivered entry is a no-op
 *   acct  account id
 *   type  one of EVENT_TYPES
 *   at    epoch ms (the app clock)
 *   data  JSON object, the type's payload below
 */
export const EVENT_TYPES = [
  'balance.low',
  'refill.succeeded',
  'refill.failed',
  'cap.reached',
  'cap.threshold',
  'agent.created',
  'agent.killed',
  'agent.revived',
  'agent.revoked',
  'capability.paused',
  'payment.parked',
  'payment.reversed',
  'support.updated',
  'proposal.created',
  'proposal.decided',
] as const

export type EventType = (typeof EVENT_TYPES)[number]

export function isEventType(t: string): t is EventType {
  return (EVENT_TYPES as readonly string[]).includes(t)
}

/** The payload of each type (`data` of the delivered event). */
export interface EventData {
  /** A debit took the balance below the threshold (the mandate's while auto-refill is on, else LOW_BALANCE_ALERT). */
  'balance.low': { balance: number; threshold: number; auto_refill: boolean; agent_id: string | null; call_id: string }
  /** A charge was credited: an auto-refill or top-up under the mandate, or a credit pack bought once (`mode` pack). */
  'refill.succeeded': { credits: number; balance: number; charge_id: string; mode: 'auto' | 'topup' | 'pack' }
  /** A refill was refused by the card processor: `reason` is `declined` or `authentication_required` (the card holder must confirm at enable_url). */
  'refill.failed': { credits: number; reason: string; code?: string; message: string; card?: string; enable_url?: string; mode?: 'auto' | 'topup' }
  /** The first refusal of an HKT day by a cap: `scope` account (daily spend), agent (its daily cap) or requests (unpriced daily request cap). */
  'cap.reached': { scope: 'account' | 'agent' | 'requests'; agent_id: string | null; cap: number; spent: number; price: number; target: string; resets_at: string }
  /**
   * A debit's spend crossed a warning level of a cap (docs/api.md §13a): the account's or an agent's
   * daily cap, or an agent's lifetime budget; once per level per period (a daily cap's HKT day, a
   * budget's lifetime). `agent_id` is the capped agent, or for the account scope the caller (null:
   * the owner token); `resets_at` is null for a budget; `call_id` the debit that crossed it.
   */
  'cap.threshold': {
    scope: 'account' | 'agent'
    agent_id: string | null
    cap_kind: 'daily_cap' | 'budget'
    percent: number
    cap: number
    spent: number
    resets_at: string | null
    call_id: string
  }
  /** `reason` operator (by hand; `via` api or chat) or breaker (with the `rule`, `limit` and `observed` value that tripped it). */
  /** An agent token was created: by the operator (parent_id null) or by an agent under itself (docs/api.md §8). */
  'agent.created': { agent_id: string; name: string; parent_id: string | null; depth: number; budget: number | null; expires_at: number | null; via: 'api' | 'chat' }
  /** `parent_id` names a sub-agent's parent; `by_agent` the ancestor that acted, when not the operator. */
  'agent.killed': { agent_id: string; name: string; reason: 'operator' | 'breaker'; via?: 'api' | 'chat'; rule?: string; limit?: number; observed?: number; target?: string; parent_id?: string | null; by_agent?: string }
  'agent.revived': { agent_id: string; name: string; via: 'api' | 'chat'; was_killed_by?: string; parent_id?: string | null }
  'agent.revoked': { agent_id: string; name: string; via: 'api' | 'chat'; parent_id?: string | null; by_agent?: string }
  /** A capability this account used in the last 7 days was paused (by the founder, or by its spend alarm). */
  'capability.paused': { slug: string; reason: 'founder' | 'spend_alarm' }
  /** A card payment that would pass the balance cap waits for the founder's review. */
  'payment.parked': { parked_id: string; credits: number; balance: number; balance_cap: number; charge_id?: string }
  /**
   * A credited card payment went back to the payer: refunded, or disputed by the card holder
   * (reverse-charge.lua). `credits` is what this amount was worth, `taken` what came off the balance,
   * `unrecovered` the part already spent; a dispute turns auto-refill off (`mandate_disabled`).
   */
  'payment.reversed': { charge_id: string; cause: 'refund' | 'dispute'; credits: number; taken: number; unrecovered: number; balance: number; reversed_cents: number; mandate_disabled: boolean }
  /** The founder moved a support problem of this account, or added a note. */
  'support.updated': { problem_id: string; status: string; note: string | null; status_url: string }
  /** An agent (or the owner) asked for more room (docs/api.md §11); `value` is credits, or the pattern of an `allow`. */
  'proposal.created': {
    proposal_id: string
    kind: string
    value: number | string
    agent_id: string | null
    reason: string
    proposed_by: string
    status: 'pending'
    status_url: string
    expires_at: string
    /** A temporary raise asked for, seconds (docs/api.md §13b). */
    for_s?: number
  }
  /** A proposal left `pending`: approved or declined (`via` api or chat), or expired (`via` expiry). */
  'proposal.decided': { proposal_id: string; kind: string; value: number | string; agent_id: string | null; status: 'approved' | 'declined' | 'expired'; via: string; note: string | null; status_url: string; lapses_at?: string }
}

/** An event as stored and delivered. */
export interface OwnerEvent<T extends EventType = EventType> {
  id: string
  accountId: string
  type: T
  /** Epoch ms. */
  at: number
  data: EventData[T]
}

/** What one line of docs says of each type (the OpenAPI description and /v1/webhooks validation messages). */
export const EVENT_DOCS: Record<EventType, string> = {
  'balance.low': 'a debit took the balance below the low-balance threshold',
  'refill.succeeded': 'an auto-refill or top-up was charged and credited',
  'refill.failed': 'a refill was refused (reason: declined, or authentication_required: confirm the card at enable_url)',
  'cap.reached': 'the first refusal of the day by the account daily cap, an agent daily cap or the request cap',
  'cap.threshold': 'spend crossed a warning level (account.thresholds, default 50/80/100 %) of a daily cap or an agent budget; once per level per day (budget: per lifetime)',
  'agent.created': 'an agent token was created, by the operator or by an agent as its sub-agent (parent_id)',
  'agent.killed': 'an agent was killed (reason operator, or breaker: the runaway-agent breaker)',
  'agent.revived': 'a killed agent was revived by the operator',
  'agent.revoked': 'an agent token was revoked for good',
  'capability.paused': 'a capability the account uses was paused',
  'payment.parked': 'a card payment over the balance cap waits for review',
  'payment.reversed': 'a credited card payment was refunded or disputed: its credits were taken back (a dispute also turns auto-refill off)',
  'support.updated': 'a support problem of the account moved or got a note',
  'proposal.created': 'an agent asked the operator for more room (a cap, a budget, a pattern, a top-up); decide it in the chat or via POST /v1/proposals/{id}/approve',
  'proposal.decided': 'a proposal was approved, declined or expired',
}
