/** The catalog file format (CONTRACT §4), validated at boot. */
import { Type as T, type Static } from '@sinclair/typebox'

export const Lane = T.Union([T.Literal('house'), T.Literal('byok'), T.Literal('free')])

export const ProviderSchema = T.Object(
  {
    base_url: T.String({ pattern: '^https?://[^/]+' }),
    key_env: T.Optional(T.String({ pattern: '^[A-Z][A-Z0-9_]*$' })),
    auth: T.Object({ header: T.String({ minLength: 1 }), scheme: T.Optional(T.String()) }),
    /** Fixed headers the provider requires (e.g. anthropic-version). */
    headers: T.Optional(T.Record(T.String(), T.String())),
    byok: T.Optional(T.Boolean()),
    proxy: T.Optional(
      T.Object({ price: T.Integer({ minimum: 0 }), paths: T.Array(T.String({ pattern: '^/' }), { minItems: 1 }) }),
    ),
  },
  { additionalProperties: false },
)

export const CapabilitySchema = T.Object(
  {
    slug: T.String({ pattern: '^[a-z0-9][a-z0-9._-]{0,79}$' }),
    provider: T.String(),
    lane: Lane,
    price: T.Integer({ minimum: 0 }),
    method: T.Union([T.Literal('GET'), T.Literal('POST'), T.Literal('PUT'), T.Literal('PATCH'), T.Literal('DELETE')]),
    path: T.String({ pattern: '^/' }),
    timeout_ms: T.Integer({ minimum: 1, default: 15000 }),
    description: T.String({ default: '' }),
    params: T.Record(T.String(), T.Unknown()),
    /** Credits per hour past which the service pauses the capability by itself. */
    spend_alarm: T.Optional(T.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
)

export const CatalogFileSchema = T.Object({
  providers: T.Record(T.String({ pattern: '^[a-z0-9][a-z0-9_-]*$' }), ProviderSchema),
  capabilities: T.Array(CapabilitySchema),
})

export type ProviderSpec = Static<typeof ProviderSchema>
export type CapabilitySpec = Static<typeof CapabilitySchema>
export type CatalogFile = Static<typeof CatalogFileSchema>
