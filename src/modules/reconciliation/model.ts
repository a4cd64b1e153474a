import { Type as T } from '@sinclair/typebox'

const Day = T.String({ description: 'A UTC day, YYYY-MM-DD' })

export const ReconciliationQuery = T.Object({
  from: T.Optional(T.String({ description: 'First UTC day, YYYY-MM-DD (default: 29 days before `to`)' })),
  to: T.Optional(T.String({ description: 'Last UTC day, YYYY-MM-DD (default: the last day due, yesterday)' })),
})

export const Tokens = T.Object({ input: T.Integer({ description: 'Input tokens not read from the cache (cache writes included)' }), cached: T.Integer({ description: 'Cache reads' }), output: T.Integer() })

export const ReconciliationRow = T.Object({
  day: Day,
  provider: T.String(),
  model: T.Union([T.String(), T.Null()], { description: 'null: a run with no model on either side' }),
  ours: Tokens,
  theirs: T.Union([Tokens, T.Null()], { description: "The provider's usage report; null when it was unavailable" }),
  difference: T.Union([Tokens, T.Null()], { description: 'theirs − ours, per kind' }),
  drift_pct: T.Union([T.Number(), T.Null()], { description: "The largest |theirs − ours| of the three kinds, as a percent of the provider's figure" }),
  status: T.Union([T.Literal('ok'), T.Literal('drift'), T.Literal('unavailable'), T.Literal('unmetered')]),
  unmetered_requests: T.Integer({ description: 'House-lane requests of that provider and day on routes we do not meter (operator openings)' }),
  error: T.Union([T.String(), T.Null()], { description: 'Why the usage report was unavailable' }),
  checked_at: T.String(),
})

export const ReconciliationList = T.Object({
  from: Day,
  to: Day,
  threshold_pct: T.Number(),
  providers: T.Array(T.String(), { description: 'The providers reconciled (an admin key set)' }),
  days: T.Array(ReconciliationRow),
})

export const ReconciliationRunObject = T.Object({ day: T.Optional(T.String({ description: 'The UTC day to reconcile, YYYY-MM-DD (default: the last day due)' })) }, { additionalProperties: false })
export const ReconciliationRunBody = T.Optional(ReconciliationRunObject)

export const ReconciliationRunResult = T.Object({
  day: Day,
  runs: T.Array(T.Object({ provider: T.String(), status: T.Union([T.Literal('ok'), T.Literal('drift'), T.Literal('unavailable')]), error: T.Union([T.String(), T.Null()]) })),
  days: T.Array(ReconciliationRow),
})
