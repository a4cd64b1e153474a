/** The catalog file format (docs/api.md §4), validated at boot. */
import { Type as T, type Static } from '@sinclair/typebox'

export const Lane = T.Union([T.Literal('house'), T.Literal('byok'), T.Literal('free')])

/** A model's prices (docs/api.md §7): integer credits per 1,000,000 tokens, and its largest output. */
export const ModelPriceSchema = T.Object(
  {
    input: T.Integer({ minimum: 0 }),
    /** Cached input tokens; absent = charged as input. */
    cached_input: T.Optional(T.Integer({ minimum: 0 })),
    /**
     * Input tokens written to the provider's prompt cache (Anthropic bills a 5-minute write at
     * 1.25× the input price); absent = charged as input.
     */
    cache_write: T.Optional(T.Integer({ minimum: 0 })),
    /** Cache writes with the 1-hour lifetime (Anthropic: 2× the input price); absent = as `cache_write`. */
    cache_write_1h: T.Optional(T.Integer({ minimum: 0 })),
    output: T.Integer({ minimum: 0 }),
    max_output: T.Integer({ minimum: 1 }),
    /**
     * The most input tokens one image part can cost on this model, where that is more than
     * IMAGE_TOKENS_BOUND (metering/media.ts): gpt-4o-mini bills an image at ~33× gpt-4o's tokens.
     */
    image_tokens: T.Optional(T.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
)

/** Token metering of a proxy route or a capability (docs/api.md §7). */
export const MeteredSchema = T.Object(
  {
    /** Where the model, the output ceiling and the usage are read. */
    dialect: T.Union([T.Literal('openai'), T.Literal('anthropic')]),
    /** Metered path suffixes (a capability's own path is its route). */
    routes: T.Optional(T.Array(T.String({ pattern: '^/' }), { minItems: 1 })),
    /** The smallest output ceiling a clamp may write into a request. */
    min_output: T.Integer({ minimum: 1, default: 16 }),
    /**
     * On the owner's lane (the account's vaulted key, which the provider bills directly) a call is
     * charged this percent of its exact token cost, not the whole of it (docs/api.md §12,
     * docs/metering.md); 0 or absent: unpriced, counted against the daily request cap. At most
     * 100: past the cost itself a fee would charge the owner more than the house lane for tokens
     * the house never pays.
     */
    byok_fee_pct: T.Optional(T.Integer({ minimum: 0, maximum: 100 })),
    /** At least one: a metered route without a priced model refuses every request on it. */
    models: T.Record(T.String({ pattern: '^[a-z0-9][a-z0-9._:-]{0,79}$' }), ModelPriceSchema, { minProperties: 1 }),
  },
  { additionalProperties: false },
)

/** A path prefix on the house lane: absolute, and free of the spellings the proxy refuses anyway. */
const HOUSE_PATH = '/[^%;?#\\\\\\s]*$'
const HousePrefix = T.String({ pattern: '^' + HOUSE_PATH, maxLength: 512 })
/** An `allow` entry: a prefix, or a method and a prefix (`GET /v1/models`: reads only). */
const HouseAllowEntry = T.String({ pattern: '^((GET|POST|PUT|PATCH|DELETE) )?' + HOUSE_PATH, maxLength: 520 })

/**
 * What a proxy route serves on the house key besides its metered routes (docs/house-lane.md):
 * closed by default. `allow`: path prefixes forwarded at the route's flat price; `owned`: prefixes
 * whose objects are the account's that made them (docs/api.md §12).
 */
export const HouseSchema = T.Object(
  {
    allow: T.Optional(T.Array(HouseAllowEntry, { default: [] })),
    owned: T.Optional(T.Array(HousePrefix)),
  },
  { additionalProperties: false },
)

export const ProviderSchema = T.Object(
  {
    base_url: T.String({ pattern: '^https?://[^/]+' }),
    key_env: T.Optional(T.String({ pattern: '^[A-Z][A-Z0-9_]*$' })),
    auth: T.Object({ header: T.String({ minLength: 1 }), scheme: T.Optional(T.String()) }),
    /** Fixed headers the provider requires (e.g. anthropic-version). */
    headers: T.Optional(T.Record(T.String(), T.String())),
    byok: T.Optional(T.Boolean()),
    proxy: T.Optional(
      T.Object({
        price: T.Integer({ minimum: 0 }),
        paths: T.Array(T.String({ pattern: '^/' }), { minItems: 1 }),
        metered: T.Optional(MeteredSchema),
        house: T.Optional(HouseSchema),
      }),
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
    /** Charged by the tokens used (docs/api.md §7): its own prices, or `true` for its provider's proxy ones. */
    metered: T.Optional(T.Union([T.Literal(true), MeteredSchema])),
  },
  { additionalProperties: false },
)

export const CatalogFileSchema = T.Object({
  /** The date the metered prices were taken from the providers' price pages (YYYY-MM-DD). */
  prices_as_of: T.Optional(T.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$' })),
  providers: T.Record(T.String({ pattern: '^[a-z0-9][a-z0-9_-]*$' }), ProviderSchema),
  capabilities: T.Array(CapabilitySchema),
})

export type ProviderSpec = Static<typeof ProviderSchema>
export type CapabilitySpec = Static<typeof CapabilitySchema>
export type CatalogFile = Static<typeof CatalogFileSchema>
export type ModelPrice = Static<typeof ModelPriceSchema>
export type MeteredSpec = Static<typeof MeteredSchema>
export type HouseSpec = Static<typeof HouseSchema>
