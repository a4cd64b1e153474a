import { Type as T } from '@sinclair/typebox'

export const ParkedPayment = T.Object({
  id: T.String(),
  account_id: T.String(),
  charge_id: T.String({ description: "The processor's charge id" }),
  credits: T.Integer(),
  kind: T.String({ description: 'pack | refill | topup' }),
  gateway: T.String(),
  state: T.String({ description: 'parked | rejecting | refund_unknown (reject again to settle) | approved | rejected | reversed (refunded or disputed at the processor before a decision: nothing to credit or refund)' }),
  at: T.String(),
})

export const ParkedList = T.Object({ parked: T.Array(ParkedPayment) })

/** Any shape: an id that names no parked payment is NOT_FOUND (the service parses it), not BAD_REQUEST. */
export const ParkedParams = T.Object({ id: T.String({ maxLength: 100 }) })

export const ParkedDecision = T.Object({
  id: T.String(),
  state: T.String(),
  account_id: T.String(),
  credits: T.Integer(),
  charge_id: T.String(),
  balance: T.Union([T.Integer({ description: 'The account balance after an approval' }), T.Null()]),
})
