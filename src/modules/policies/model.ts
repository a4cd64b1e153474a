import { Type as T } from '@sinclair/typebox'
import { AllowlistSchema } from '../../governance/allowlist'
import { Credits, IdenticalPerMinute, RaisedSchema, Thresholds } from '../../governance/model'

const nullableCredits = (description: string) => T.Optional(T.Union([Credits, T.Null()], { description }))

const AccountPolicy = T.Object({
  daily_cap: T.Integer({ description: 'Credits the whole account may spend per HKT day' }),
  balance_cap: T.Integer({ description: 'Most credits the balance may hold (set by the founder)' }),
  allowlist: T.Union([T.Array(T.String()), T.Null()]),
  thresholds: T.Array(T.Integer(), {
    description: 'Percentages of each daily cap (account and agents) and agent budget at which the owner gets one cap.threshold event per period; ascending; [] = off',
  }),
  raised: RaisedSchema,
})

const BREAKER_DOC =
  'The runaway-agent breaker: an agent that spends more than credits_per_minute, or sends more than identical_per_minute ' +
  'identical requests (same target and body), within a sliding minute is killed at once (AGENT_KILLED, reason "breaker"; ' +
  'event agent.killed) until the operator revives it. Defaults: 1000 credits and 20 identical requests per minute ' +
  '(deployment env BREAKER_CREDITS_PER_MINUTE, BREAKER_IDENTICAL_PER_MINUTE); 0 turns a rule off.'

const AgentPolicy = T.Object({
  daily_cap: T.Union([T.Integer(), T.Null()]),
  allowlist: T.Union([T.Array(T.String()), T.Null()]),
  per_call_max: T.Union([T.Integer(), T.Null()]),
  breaker: T.Object(
    {
      credits_per_minute: T.Integer({ description: 'Credits per sliding minute past which the agent is killed (0 = off)' }),
      identical_per_minute: T.Integer({ description: 'Identical requests per sliding minute past which the agent is killed (0 = off)' }),
    },
    { description: BREAKER_DOC },
  ),
  budget: T.Union([T.Integer(), T.Null()], { description: 'Lifetime credits of the agent and its subtree (POLICY_DENIED agent_budget past it); null = none' }),
  spent_total: T.Integer({ description: 'Credits spent over its life by the agent and its subtree, refunds given back' }),
  parent_id: T.Union([T.String(), T.Null()], { description: 'The agent that created this sub-agent; null for the operator\'s agents' }),
  depth: T.Integer({ minimum: 1, maximum: 4 }),
  expires_at: T.Union([T.String({ format: 'date-time' }), T.Null()]),
  raised: RaisedSchema,
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
          thresholds: T.Optional(T.Union([Thresholds, T.Null()], { description: 'Warning levels, 1..100 each, at most 10, no repeats; null = back to [50, 80, 100]; [] = off' })),
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
            budget: nullableCredits('Lifetime credits of the agent and its subtree; null = none'),
            breaker: T.Optional(
              T.Object(
                {
                  credits_per_minute: nullableCredits('null = the deployment default; 0 = off'),
                  identical_per_minute: T.Optional(T.Union([IdenticalPerMinute, T.Null()], { description: 'null = the deployment default; 0 = off' })),
                },
                { additionalProperties: false, description: BREAKER_DOC },
              ),
            ),
          },
          { additionalProperties: false },
        ),
        { maxProperties: 100 },
      ),
    ),
  },
  { additionalProperties: false, description: 'Any part of the GET shape; absent fields stay as they are' },
)
