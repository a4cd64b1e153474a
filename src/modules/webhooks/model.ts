import { Type as T } from '@sinclair/typebox'
import { EVENT_DOCS, EVENT_TYPES } from '../../events/types'

const TYPES_DOC = EVENT_TYPES.map((t) => `${t}: ${EVENT_DOCS[t]}`).join('; ')

// A pattern rather than a union of literals: a validation error then names the allowed values.
export const EventTypeSchema = T.String({ pattern: `^(${EVENT_TYPES.map((t) => t.replace('.', '\\.')).join('|')})$`, description: TYPES_DOC })

export const WebhookPut = T.Object(
  {
    url: T.String({ maxLength: 2048, description: 'HTTPS endpoint that receives the deliveries (POST, JSON, Standard Webhooks signature)' }),
    events: T.Optional(T.Array(EventTypeSchema, { minItems: 1, maxItems: EVENT_TYPES.length, uniqueItems: true, description: 'Event types wanted; absent = every type' })),
    rotate_secret: T.Optional(T.Boolean({ description: 'Generate a new signing secret (shown once in this answer); the old one stops at once' })),
  },
  { additionalProperties: false },
)

const endpointFields = {
  url: T.String(),
  events: T.Union([T.Array(T.String()), T.Null()], { description: 'null = every type' }),
  created_at: T.String({ format: 'date-time' }),
  updated_at: T.String({ format: 'date-time' }),
}

export const Webhook = T.Object(endpointFields)

export const WebhookSaved = T.Object({
  ...endpointFields,
  secret: T.Union([T.String(), T.Null()], {
    description:
      'The signing secret (whsec_…), shown only when generated: on the first PUT and with rotate_secret; null otherwise. Verify deliveries with any Standard Webhooks library: headers webhook-id (the event id, the same on every retry: dedupe on it), webhook-timestamp, webhook-signature.',
  }),
})

// Query strings arrive as text; the service checks the range so the error can name `limit`.
const Limit = T.Optional(T.String({ pattern: '^[0-9]{1,4}$', description: 'Page size, 1..200 (default 50)' }))

export const DeliveriesQuery = T.Object({ limit: Limit })

export const DeliveryList = T.Object({
  deliveries: T.Array(
    T.Object({
      id: T.Integer(),
      event_id: T.String({ description: 'Also the webhook-id header: the same on every attempt' }),
      event_type: T.String(),
      status: T.String({ description: 'pending (retrying) | delivered | failed (gave up after a day) | cancelled (endpoint removed)' }),
      attempts: T.Integer(),
      next_retry_at: T.Union([T.String({ format: 'date-time' }), T.Null()], { description: 'When the next attempt is due; null unless pending' }),
      last_response_code: T.Union([T.Integer(), T.Null()], { description: "The endpoint's HTTP status on the last attempt; null when none came" }),
      last_error: T.Union([T.String(), T.Null()]),
      last_attempt_at: T.Union([T.String({ format: 'date-time' }), T.Null()]),
      created_at: T.String({ format: 'date-time' }),
      delivered_at: T.Union([T.String({ format: 'date-time' }), T.Null()]),
    }),
  ),
})

export const EventsQuery = T.Object({
  limit: Limit,
  cursor: T.Optional(T.String({ maxLength: 200, description: 'next_cursor of the previous page' })),
})

export const EventList = T.Object({
  events: T.Array(
    T.Object({
      id: T.String(),
      type: T.String(),
      timestamp: T.String({ format: 'date-time' }),
      data: T.Record(T.String(), T.Unknown()),
    }),
  ),
  next_cursor: T.Union([T.String(), T.Null()]),
})
