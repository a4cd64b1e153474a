import { Type as T } from '@sinclair/typebox'
import { AllowlistSchema } from '../../governance/allowlist'
import { AgentName, AgentTtl, Credits, RaisedSchema } from '../../governance/model'

const OptionalCredits = (description: string) => T.Union([Credits, T.Null()], { description })

export const AgentState = T.Union([T.Literal('active'), T.Literal('killed'), T.Literal('revoked')])

export const CreateAgentBody = T.Object(
  {
    name: AgentName,
    daily_cap: T.Optional(OptionalCredits('Credits this agent may spend per HKT day; null = no agent-level cap')),
    allowlist: T.Optional(AllowlistSchema),
    per_call_max: T.Optional(OptionalCredits('Most credits one call of this agent may cost; null = no limit')),
    budget: T.Optional(
      OptionalCredits('Lifetime credits of this agent and its subtree; null = none. Required with an agent token (a sub-agent): at most what the caller has left'),
    ),
    ttl_s: T.Optional(T.Union([AgentTtl, T.Null()], { description: 'Seconds until the token expires (AGENT_REVOKED, reason expired); never past the parent\'s expiry' })),
  },
  { additionalProperties: false },
)

const policyFields = {
  daily_cap: T.Union([T.Integer(), T.Null()]),
  allowlist: T.Union([T.Array(T.String()), T.Null()]),
  per_call_max: T.Union([T.Integer(), T.Null()]),
  budget: T.Union([T.Integer(), T.Null()], { description: 'Lifetime credits of the agent and its subtree; null = none' }),
}

const treeFields = {
  parent_id: T.Union([T.String(), T.Null()], { description: 'The agent that created this sub-agent; null for the operator\'s agents' }),
  depth: T.Integer({ minimum: 1, maximum: 4, description: '1 for the operator\'s agents' }),
  expires_at: T.Union([T.String({ format: 'date-time' }), T.Null()]),
}

export const Agent = T.Object({
  id: T.String(),
  name: T.String(),
  state: AgentState,
  kill_reason: T.Union([T.Literal('operator'), T.Literal('breaker'), T.Null()], {
    description: 'Why a killed agent is killed: operator (by hand) or breaker (the runaway-agent breaker); null unless killed',
  }),
  ...policyFields,
  ...treeFields,
  spent_today: T.Integer({ description: 'Credits spent this HKT day (by the agent and its subtree)' }),
  spent_total: T.Integer({ description: 'Credits spent over its life by the agent and its subtree, refunds given back' }),
  created_at: T.String({ format: 'date-time' }),
  oauth_client: T.Union([T.String(), T.Null()], { description: 'The OAuth client (its name) whose consent created this agent, for an MCP client connected by URL; null otherwise' }),
  raised: RaisedSchema,
})

export const CreatedAgent = T.Object({
  id: T.String(),
  name: T.String(),
  token: T.String({ description: 'The agent token (ak_...); shown once' }),
  state: AgentState,
  ...policyFields,
  ...treeFields,
  created_at: T.String({ format: 'date-time' }),
})

export const AgentList = T.Object({ agents: T.Array(Agent) })

export const AgentParams = T.Object({ id: T.String({ maxLength: 64 }) })
