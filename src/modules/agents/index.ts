import { Elysia } from 'elysia'
import { changeAgentState, readAgents, readSubtree, type AgentAction } from '../../governance/agents'
import { bearerAuth, http, type Http, type RouteContext } from '../../http'
import { rejectUnknownFields } from '../../edge/strict-body'
import type { Services } from '../../services'
import { Agent, AgentList, AgentParams, CreateAgentBody, CreatedAgent } from './model'
import { createAgentFor } from '../../governance/create-agent'

/**
 * The operator manages every agent; an agent token (docs/api.md §8) creates sub-agents under itself,
 * lists, kills and revokes only its own descendants (anything else → NOT_FOUND), and never
 * revives (FORBIDDEN): only the operator frees what was stopped.
 */
export const agentRoutes = (s: Services, h: Http = http(s)) => {
  const move = (action: AgentAction) => async (c: RouteContext & { params: { id: string } }) => {
    // Revive is operator-only in the route table: an agent token is refused FORBIDDEN by the admission.
    const principal = await h.admitIn(c)
    return changeAgentState(s.ctx, principal.accountId, c.params.id, action, 'api', principal.agentId)
  }
  const moveHooks = (summary: string) => ({ params: AgentParams, response: { 200: Agent }, detail: { summary } })
  return new Elysia()
    .use(bearerAuth)
    .post(
      '/v1/agents',
      async (c) => {
        const principal = await h.admitIn(c)
        const { set, body } = c
        const agent = await createAgentFor(s.ctx, principal, body)
        set.status = 201
        return agent
      },
      {
        parse: h.json,
        body: CreateAgentBody,
        transform: rejectUnknownFields(CreateAgentBody),
        response: { 201: CreatedAgent },
        detail: { summary: 'Create a named agent token (shown once) with its own caps and allowlist; with an agent token, a sub-agent with a budget carved from the caller\'s' },
      },
    )
    .get(
      '/v1/agents',
      async (c) => {
        const principal = await h.admitIn(c)
        const agents = principal.agentId === null ? await readAgents(s.ctx, principal.accountId) : await readSubtree(s.ctx, principal.accountId, principal.agentId)
        return { agents }
      },
      { response: { 200: AgentList }, detail: { summary: "List the account's agent tokens (an agent token: its descendants) with today's and lifetime spend" } },
    )
    .post('/v1/agents/:id/kill', move('kill'), moveHooks('Kill an agent token: its calls answer AGENT_KILLED until revived (repeating is a no-op)'))
    .post('/v1/agents/:id/revive', move('revive'), moveHooks('Revive a killed agent token (operator only); a revoked one → CONFLICT'))
    .delete('/v1/agents/:id', move('revoke'), moveHooks('Revoke an agent token for good: its calls answer AGENT_REVOKED'))
}
