import { Type as T } from '@sinclair/typebox'

export const CallResponse = T.Object({
  call_id: T.String(),
  slug: T.String(),
  charged: T.Integer({ description: 'Credits debited' }),
  balance: T.Integer({ description: 'Balance after the call' }),
  provider_status: T.Integer({ description: "The provider's HTTP status (4xx answers are charged and passed through)" }),
  usage: T.Optional(
    T.Object(
      {
        input: T.Integer({ description: 'Input tokens, cache reads and writes apart' }),
        cached: T.Integer({ description: 'Input tokens read from the cache' }),
        output: T.Integer(),
        cache_write: T.Optional(T.Integer({ description: 'Input tokens written to the cache, 5-minute lifetime' })),
        cache_write_1h: T.Optional(T.Integer({ description: 'Input tokens written to the cache, 1-hour lifetime' })),
        source: T.Union([T.Literal('provider'), T.Literal('estimated')]),
        cost: T.Number({ description: 'The exact cost in USD: micro-credits / 1e6 / CREDITS_PER_USD' }),
        cost_details: T.Object({ credits: T.String({ description: 'The exact cost in credits, 6 places; the settle charges from it (with the remainder)' }) }),
      },
      { description: 'A metered capability: the usage the call is charged for, and its exact cost' },
    ),
  ),
  run: T.Optional(
    T.Object(
      {
        id: T.String(),
        max: T.Integer(),
        spent: T.Integer({ description: "The run's spend once this call is charged" }),
        expires_at: T.String(),
      },
      { description: 'The run budget the call named (X-Budget-Run, docs/api.md §13c)' },
    ),
  ),
  result: T.Unknown({ description: "The provider's answer" }),
})
