import { Type as T } from '@sinclair/typebox'

export const CallResponse = T.Object({
  call_id: T.String(),
  slug: T.String(),
  charged: T.Integer({ description: 'Credits debited' }),
  balance: T.Integer({ description: 'Balance after the call' }),
  provider_status: T.Integer({ description: "The provider's HTTP status (4xx answers are charged and passed through)" }),
  result: T.Unknown({ description: "The provider's answer" }),
})
