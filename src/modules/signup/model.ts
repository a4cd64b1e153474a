import { Type as T } from '@sinclair/typebox'

export const SignupBody = T.Object(
  {
    email: T.String({ format: 'email', maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$', description: 'Account identity' }),
    origin: T.Optional(T.String({ maxLength: 200, description: 'Where the agent came from (free text)' })),
    referred_by: T.Optional(T.String({ pattern: '^ref_[A-Za-z0-9_-]{12}$', description: "The referrer's public_ref" })),
  },
  { additionalProperties: false },
)

export const SignupResponse = T.Object({
  account_id: T.String(),
  token: T.String({ description: 'Owner (operator) token; shown once' }),
  public_ref: T.String({ description: 'Your referral reference' }),
  credits_granted: T.Integer(),
  balance: T.Integer(),
})

export const RotateResponse = T.Object({ token: T.String({ description: 'The new owner token; the old one stops working at once' }) })

/** POST /v1/token/rotate: empty with the operator bearer; `{email}` without one (lost token). */
export const RotateBody = T.Optional(
  T.Object(
    { email: T.Optional(T.String({ maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$', description: 'The account e-mail (no bearer)' })) },
    { additionalProperties: false },
  ),
)

export const RotateRequested = T.Object({
  message: T.String({ description: 'The same answer whether or not an account has this e-mail' }),
})

export const RecoveryQuery = T.Object({ code: T.Optional(T.String({ maxLength: 100 })) })
