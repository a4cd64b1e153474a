import { Type as T } from '@sinclair/typebox'

// The bounds of what governance stores. The REST models (modules/agents, modules/policies) are built
// from these, and the services check their input against the same ones (schema-check.ts), so the
// console, the chat and the MCP tools are held to what REST's validation holds a body to.

/** The most credits a cap, a budget or a proposal may name: every such amount stays exact in Lua's doubles. */
export const MAX_CREDITS = 1_000_000_000_000
/** Credits in a cap. */
export const Credits = T.Integer({ minimum: 0, maximum: MAX_CREDITS })
/** A cap or budget that may be removed (null). */
export const NullableCredits = T.Union([Credits, T.Null()])
/** An agent's name: shown in listings and activity. */
export const AgentName = T.String({ minLength: 1, maxLength: 64, pattern: '\\S', description: 'Shown in listings and activity' })
/** Seconds until an agent token expires. */
export const AgentTtl = T.Integer({ minimum: 1, maximum: 10 * 365 * 86400 })
/** The warning levels of the caps (docs/api.md §13a): percentages of a daily cap or budget, each told once per period. */
export const Thresholds = T.Array(T.Integer({ minimum: 1, maximum: 100 }), {
  maxItems: 10,
  uniqueItems: true,
  description: 'Percentages 1..100 of each daily cap and agent budget at which the owner gets a cap.threshold event; [] = off',
})
/** The levels of an account that never set its own. */
export const DEFAULT_THRESHOLDS: readonly number[] = [50, 80, 100]
/** The breaker's identical requests per sliding minute (0 = off). */
export const IdenticalPerMinute = T.Integer({ minimum: 0, maximum: 1_000_000 })

const raiseOf = <S extends ReturnType<typeof T.Union>>(base: S) =>
  T.Optional(T.Object({ until: T.String({ format: 'date-time', description: 'When the raise lapses by itself' }), base }))
/** Standing temporary raises (docs/api.md §13b): the policy field shows the raised value until `until`, then `base`. */
export const RaisedSchema = T.Optional(
  T.Object(
    {
      daily_cap: raiseOf(T.Union([T.Integer(), T.Null()])),
      allowlist: raiseOf(T.Union([T.Array(T.String()), T.Null()])),
      budget: raiseOf(T.Union([T.Integer(), T.Null()])),
    },
    { description: 'Present while an approval for a time (POST /v1/proposals/{id}/approve with for_s) stands: each raised field, when it lapses and what it goes back to' },
  ),
)
