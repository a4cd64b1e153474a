/**
 * Agent tokens: the operator's (create, token shown once) and an agent's own sub-agents
 * (docs/api.md §8: a budget carved from its own, limits no wider than its own, at most MAX_DEPTH deep).
 * errors: BAD_REQUEST (name, caps, budget, ttl_s or allowlist out of bounds — the bounds of POST
 *         /v1/agents' body, checked here so the console and the chat meet them too; a sub-agent
 *         without a budget), POLICY_DENIED
 *         (exceeds_parent, max_depth), AGENT_KILLED / AGENT_REVOKED (the creator's subtree is
 *         stopped), CONFLICT (agent limit).
 */
import { Type as T } from '@sinclair/typebox'
import type { Principal } from '../auth/principal'
import { ApiError } from '../errors'
import { checkField } from '../schema-check'
import { encodeAllowlist } from './allowlist'
import { AgentName, AgentTtl, NullableCredits } from './model'
import { createAgent, type AgentView } from './agents'
import type { RedisContext } from '../redis/context'

export interface CreateAgentInput {
  name: string
  daily_cap?: number | null
  allowlist?: string[] | null
  per_call_max?: number | null
  budget?: number | null
  ttl_s?: number | null
}

/** Creates an agent for the caller: the operator's own, or a sub-agent of the calling agent. */
export async function createAgentFor(ctx: RedisContext, by: string | Pick<Principal, 'accountId' | 'agentId' | 'chain'>, body: CreateAgentInput) {
  // An account id alone is the operator (the console, the chat).
  const creator = typeof by === 'string' ? { accountId: by, agentId: null, chain: [] } : by
  checkInput(body)
  const parent = creator.agentId === null ? undefined : { id: creator.agentId, chain: creator.chain ?? [] }
  // A sub-agent's spend must be bounded by something its creator owns: its budget.
  if (parent && (body.budget === undefined || body.budget === null))
    throw new ApiError('BAD_REQUEST', { field: 'budget', expected: 'credits (integer ≥ 0): a sub-agent is created with a budget carved from its parent' })
  const { agent, token } = await createAgent(ctx, creator.accountId, {
    name: body.name,
    daily_cap: body.daily_cap ?? null,
    allow: encodeAllowlist(body.allowlist ?? null, 'allowlist'),
    per_call_max: body.per_call_max ?? null,
    budget: body.budget ?? null,
    ttl_s: body.ttl_s ?? null,
    parent,
  })
  return created(agent, token)
}

const NullableTtl = T.Union([AgentTtl, T.Null()])

/**
 * The bounds of POST /v1/agents' body (built from the same schemas), for every caller; the
 * allowlist's are checked where every allowlist is encoded.
 */
function checkInput(body: CreateAgentInput): void {
  checkField(AgentName, body.name, 'name')
  if (body.daily_cap !== undefined) checkField(NullableCredits, body.daily_cap, 'daily_cap')
  if (body.per_call_max !== undefined) checkField(NullableCredits, body.per_call_max, 'per_call_max')
  if (body.budget !== undefined) checkField(NullableCredits, body.budget, 'budget')
  if (body.ttl_s !== undefined) checkField(NullableTtl, body.ttl_s, 'ttl_s')
}

function created({ spent_today: _s, spent_total: _t, kill_reason: _k, ...agent }: AgentView, token: string) {
  return {
    id: agent.id,
    name: agent.name,
    token,
    state: agent.state,
    daily_cap: agent.daily_cap,
    allowlist: agent.allowlist,
    per_call_max: agent.per_call_max,
    budget: agent.budget,
    parent_id: agent.parent_id,
    depth: agent.depth,
    expires_at: agent.expires_at,
    created_at: agent.created_at,
  }
}
