import { Type as T } from '@sinclair/typebox'
import { FreeText } from '../../edge/text'
import { STATUSES } from '../../support/problems'

export const CATEGORIES = ['bug', 'billing', 'provider', 'abuse', 'other'] as const

// Patterns rather than unions of literals: a validation error then names the allowed values.
const oneOf = (values: readonly string[], description: string) => T.String({ pattern: `^(${values.join('|')})$`, description })

export const SupportBody = T.Object(
  {
    category: oneOf(CATEGORIES, CATEGORIES.join(' | ')),
    slug: T.Optional(T.String({ minLength: 1, maxLength: 100, description: 'The capability concerned' })),
    call_id: T.Optional(T.String({ minLength: 1, maxLength: 64, description: 'From a call answer or /v1/activity' })),
    error_code: T.Optional(T.String({ pattern: '^[A-Z][A-Z_]{0,39}$', description: 'The error code received, e.g. PROVIDER_ERROR' })),
    http_status: T.Optional(T.Integer({ minimum: 100, maximum: 599 })),
    summary: FreeText({ minLength: 1, maxLength: 280, description: 'What happened, in at most 280 characters; no payloads or keys' }),
  },
  { additionalProperties: false, description: 'Metadata only: unknown fields are refused' },
)

export const SupportCreated = T.Object({
  id: T.String(),
  status: T.Literal('open'),
  status_url: T.String({ description: 'Poll this for the status and the founder\'s updates' }),
})

const Status = oneOf(STATUSES, STATUSES.join(' → '))

export const SupportProblem = T.Object({
  id: T.String(),
  status: Status,
  category: T.String(),
  slug: T.Union([T.String(), T.Null()]),
  call_id: T.Union([T.String(), T.Null()]),
  error_code: T.Union([T.String(), T.Null()]),
  http_status: T.Union([T.Integer(), T.Null()]),
  summary: T.String(),
  created_at: T.String({ format: 'date-time' }),
  updates: T.Array(T.Object({ status: T.String(), note: T.Union([T.String(), T.Null()]), at: T.String({ format: 'date-time' }) })),
})

export const SupportParams = T.Object({ id: T.String({ maxLength: 64 }) })

export const SupportPatch = T.Object(
  {
    status: T.Optional(Status),
    note: T.Optional(FreeText({ minLength: 1, maxLength: 2000, description: 'Shown to the account at its status_url' })),
  },
  { additionalProperties: false, minProperties: 1 },
)
