import { Type as T } from '@sinclair/typebox'
import { AllowlistSchema } from '../../governance/allowlist'
import { Credits } from '../../governance/model'

const nullableCredits = (description: string) => T.Optional(T.Union([Credits, T.Null()], { description }))

const AccountPolicy = T.Object({
  daily_cap: T.Integer({ description: 'Credits the whole account may spend per HKT day' }),
  balance_cap: T.Integer({ description: 'Most credits the balance may hold (set by the founder)' }),
  allowlist: T.Union([T.Array(T.String()), T.Null()]),
})

const AgentPolicy = T.Object({
  daily_cap: T.Union([T.Integer(), T.Null()]),
  allowlist: T.Union([T.Array(T.String()), T.Null()]),
  per_call_max: T.Union([T.Integer(), T.Null()]),
})

export const Policies = T.Object({
  account: AccountPolicy,
  agents: T.Record(T.String(), AgentPolicy, { description: 'By agent id; revoked agents are left out' }),
})

export const PoliciesPatch = T.Object(
  {
    account: T.Optional(
      T.Object(
        {
          daily_cap: nullableCredits('null = back to the deployment default'),
          allowlist: T.Optional(AllowlistSchema),
          balance_cap: T.Optional(T.Unknown({ description: 'Founder-only: answered with FORBIDDEN here' })),
        },
        { additionalProperties: false },
      ),
    ),
    agents: T.Optional(
      T.Record(
        T.String(),
        T.Object(
          {
            daily_cap: nullableCredits('null = no agent-level cap'),
            allowlist: T.Optional(AllowlistSchema),
            per_call_max: nullableCredits('null = no per-call limit'),
          },
          { additionalProperties: false },
        ),
        { maxProperties: 100 },
      ),
    ),
  },
  { additionalProperties: false, description: 'Any part of the GET shape; absent fields stay as they are' },
)
