import { Type as T } from '@sinclair/typebox'
import { CALL_OUTCOMES, SETTLEMENT } from '../../paid-request'

export const BalanceResponse = T.Object({
  balance: T.Integer({ description: 'Credits' }),
  held: T.Integer({
    description:
      'Credits reserved by metered LLM calls still in flight, off `balance` until each settles (charged its exact cost, the rest released). The ledger (the statement\'s balance_after) counts them: it sums to balance + held',
  }),
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

const Tokens = T.Object(
  {
    input: T.Integer({ description: 'Input tokens neither read from nor written to the cache' }),
    cached: T.Integer(),
    output: T.Integer(),
    cache_write: T.Optional(T.Integer({ description: "Input tokens written to the provider's prompt cache, 5-minute lifetime (Anthropic); absent when none" })),
    cache_write_1h: T.Optional(T.Integer({ description: 'Cache writes with the 1-hour lifetime; absent when none' })),
  },
  { description: 'Metered calls: the tokens charged for; null for flat-priced calls' },
)

/** GET /v1/activity/{call_id}: one call's record, with a metered call's reservation and settlement. */
export const CallDetail = T.Object({
  call_id: T.String(),
  route: T.Optional(T.String({ description: 'A proxied call: proxy:<provider>' })),
  slug: T.Optional(T.String({ description: 'A capability call' })),
  agent_id: T.Union([T.String(), T.Null()]),
  model: T.Union([T.String(), T.Null()]),
  tokens: T.Union([Tokens, T.Null()]),
  reserved: T.Integer({ description: 'Credits debited when the call started (a flat call: its price)' }),
  charged: T.Integer({ description: 'Credits the call cost in the end (0 when refunded), as in the GET /v1/activity list' }),
  uncharged: T.Integer({ description: 'Credits of usage past the reservation, not charged' }),
  usage_source: T.Union([T.Literal('provider'), T.Literal('estimated'), T.Null()]),
  outcome: T.String(),
  http_status: T.Union([T.Integer(), T.Null()]),
  latency_ms: T.Integer(),
  at: T.String(),
})

export const ActivityEntry = T.Object({
  call_id: T.String(),
  slug: T.String(),
  agent_id: T.Union([T.String(), T.Null()]),
  charged: T.Integer({ description: 'Credits the call cost in the end: 0 when refunded; a metered call its settled charge (as GET /v1/activity/{call_id})' }),
  reserved: T.Integer({ description: 'Credits debited when the call started (a flat call: its price; a metered call: its reservation)' }),
  refunded: T.Boolean(),
  outcome: T.String({ description: `How the call ended. Charged: ${byRule('charged')}. Refunded: ${byRule('refunded')}.` }),
  http_status: T.Union([T.Integer(), T.Null()]),
  latency_ms: T.Integer(),
  at: T.String(),
  model: T.Union([T.String(), T.Null()], { description: 'Metered calls: the model (docs/api.md §7); null for flat-priced calls' }),
  tokens: T.Union([Tokens, T.Null()]),
})

export const ActivityResponse = T.Object({
  balance: T.Integer(),
  calls: T.Array(ActivityEntry),
  next_cursor: T.Union([T.String(), T.Null()]),
})
