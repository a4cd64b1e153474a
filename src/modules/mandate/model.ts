import { Type as T } from '@sinclair/typebox'
import { MAX_LIMIT } from '../../mandate/mandate'

const Credits = (description: string) => T.Integer({ minimum: 0, maximum: MAX_LIMIT, description })

export const MandateResponse = T.Object({
  enabled: T.Boolean(),
  threshold: T.Integer({ description: 'Credits: a debit that leaves the balance below this starts one background refill' }),
  refill: T.Integer({ description: 'Credits added by one refill (also the default amount of POST /v1/topup)' }),
  ceiling: T.Integer({ description: 'Credits: at most this much is refilled (auto and explicit) per HKT calendar month' }),
  period: T.Literal('month'),
  refilled_this_period: T.Integer({ description: 'Credits refilled under the mandate in the current HKT month' }),
  pending_this_period: T.Integer({
    description: 'Credits charged this HKT month whose outcome the processor has not confirmed yet; they count against the ceiling until credited or failed',
  }),
  card: T.Union([T.Object({ brand: T.String(), last4: T.String() }), T.Null()]),
  enable_url: T.String({ description: 'Saved-card consent page (/mandate?ref=...): the only way to save or replace the card' }),
  disabled_reason: T.Union([T.String({ description: 'e.g. authentication_required: the bank wants the card holder; consent again' }), T.Null()]),
  last_failure: T.Union([T.Object({ code: T.String(), at: T.String() }), T.Null()]),
})

export const MandateUpdateBody = T.Object(
  {
    threshold: T.Optional(Credits('Credits')),
    refill: T.Optional(Credits('Credits; 0, or a whole number of cents of at least $0.50')),
    ceiling: T.Optional(Credits('Credits per HKT month')),
    enabled: T.Optional(T.Boolean({ description: 'true needs a completed consent (else CONSENT_REQUIRED)' })),
  },
  { additionalProperties: false },
)

export const TopupObject = T.Object(
  { amount: T.Optional(T.Integer({ minimum: 1, maximum: MAX_LIMIT, description: "Credits; defaults to the mandate's refill" })) },
  { additionalProperties: false },
)
export const TopupBody = T.Optional(TopupObject)

export const TopupResponse = T.Object({
  credits_added: T.Integer(),
  balance: T.Integer(),
  charge_id: T.String({ description: "The processor's charge id, named by the ledger entry" }),
})
