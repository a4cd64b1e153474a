import { Type as T } from '@sinclair/typebox'
import { CALL_OUTCOMES, SETTLEMENT } from '../../ledger/paid-call'

export const BalanceResponse = T.Object({
  balance: T.Integer({ description: 'Credits' }),
  balance_cap: T.Integer(),
  daily_cap: T.Integer(),
  spent_today: T.Integer({ description: 'Credits spent in the current HKT day' }),
  resets_at: T.String({ description: 'Next 00:00 HKT, ISO 8601' }),
  links: T.Object({
    topup: T.String({ description: "POST here (with a bearer) for the agent's own top-up through the mandate" }),
    enable_auto_refill: T.String({ description: 'Saved-card consent page of the auto-refill mandate (/mandate?ref=...)' }),
    buy_credits: T.String({ description: 'Page where a human buys a credit pack once (Stripe Checkout; sandbox: a test-card form)' }),
    packs: T.Array(
      T.Object({ credits: T.Integer(), price_usd: T.String({ description: 'e.g. "5.00"' }), url: T.String({ description: 'Payment link of this pack' }) }),
    ),
  }),
})

// Query strings arrive as text; the service checks the range so the error can name `limit`.
export const ActivityQuery = T.Object({
  limit: T.Optional(T.String({ pattern: '^[0-9]{1,4}$', description: 'Page size, 1..200 (default 50)' })),
  cursor: T.Optional(T.String({ maxLength: 200, description: 'next_cursor of the previous page' })),
})


/** The outcome words as the settlement table has them, so the documentation cannot drift from it. */
const byRule = (rule: 'charged' | 'refunded') => CALL_OUTCOMES.filter((o) => SETTLEMENT[o] === rule).join(' | ')

export const ActivityEntry = T.Object({
  call_id: T.String(),
  slug: T.String(),
  agent_id: T.Union([T.String(), T.Null()]),
  charged: T.Integer(),
  refunded: T.Boolean(),
  outcome: T.String({ description: `How the call ended. Charged: ${byRule('charged')}. Refunded: ${byRule('refunded')}.` }),
  http_status: T.Union([T.Integer(), T.Null()]),
  latency_ms: T.Integer(),
  at: T.String(),
})

export const ActivityResponse = T.Object({
  balance: T.Integer(),
  calls: T.Array(ActivityEntry),
  next_cursor: T.Union([T.String(), T.Null()]),
})
