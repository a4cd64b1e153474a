/** The search and capabilities answers. */
import { Type as T } from '@sinclair/typebox'
import { Lane, ModelPriceSchema } from '../../catalog/schema'

export const CapabilityStatus = T.Union([T.Literal('live'), T.Literal('paused'), T.Literal('unavailable')])

export const SearchResult = T.Object({
  slug: T.String(),
  lane: Lane,
  price: T.Integer({ description: 'Credits debited per call' }),
  params: T.Record(T.String(), T.Unknown(), { description: 'JSON Schema of the call body' }),
  provider: T.String(),
  description: T.String(),
  status: CapabilityStatus,
  /** Present on a metered capability (docs/api.md §7): charged by its tokens at these prices, not by `price` (0). */
  metered: T.Optional(
    T.Object({
      dialect: T.Union([T.Literal('openai'), T.Literal('anthropic')]),
      unit: T.Literal('credits per 1,000,000 tokens'),
      min_output: T.Integer(),
      models: T.Record(T.String(), ModelPriceSchema),
    }),
  ),
  /** Present on the built-in demo provider's capabilities (DEMO_PROVIDER): served by this service, nothing real. */
  demo: T.Optional(T.Literal(true)),
})

export const SearchQuery = T.Object({ q: T.String({ minLength: 1, maxLength: 200 }) })
export const SearchResponse = T.Object({ query: T.String(), results: T.Array(SearchResult) })
export const CapabilitiesResponse = T.Object({
  live: T.Array(T.String()),
  paused: T.Array(T.String()),
  unavailable: T.Array(T.String()),
  /** The built-in demo provider's slugs (also listed by state above); empty when DEMO_PROVIDER leaves it off. */
  demo: T.Array(T.String()),
})
