/**
 * Agent tokens for the operator: create (token shown once), list with today's spend, kill, revive,
 * revoke. errors: BAD_REQUEST (allowlist pattern), NOT_FOUND, CONFLICT (see governance/agents).
 */
import { encodeAllowlist } from './allowlist'
import { createAgent, type AgentView } from './agents'
import type { RedisContext } from '../redis/context'

export interface CreateAgentInput {
  name: string
  daily_cap?: number | null
  allowlist?: string[] | null
  per_call_max?: number | null
}

export async function createAgentFor(ctx: RedisContext, acct: string, body: CreateAgentInput) {
  const { agent, token } = await createAgent(ctx, acct, {
    name: body.name,
    daily_cap: body.daily_cap ?? null,
    allow: encodeAllowlist(body.allowlist ?? null, 'allowlist'),
    per_call_max: body.per_call_max ?? null,
  })
  return created(agent, token)
}

function created({ spent_today: _s, ...agent }: AgentView, token: string) {
  return { id: agent.id, name: agent.name, token, state: agent.state, daily_cap: agent.daily_cap, allowlist: agent.allowlist, per_call_max: agent.per_call_max, created_at: agent.created_at }
}
