import { Elysia } from 'elysia'
import { changeAgentState, readAgents, type AgentAction } from '../../governance/agents'
import { bearerAuth, http, type Http, type RouteContext } from '../../http'
import { rejectUnknownFields } from '../../edge/strict-body'
import type { Services } from '../../services'
import { Agent, AgentList, AgentParams, CreateAgentBody, CreatedAgent } from './model'
import { createAgentFor } from '../../governance/create-agent'

/** Operator-only (an agent token → FORBIDDEN): agents cannot mint or free each other. */
export const agentRoutes = (s: Services, h: Http = http(s)) => {
  const move = (action: AgentAction) => async (c: RouteContext & { params: { id: string } }) => {
    const principal = await h.operatorIn(c)
    return changeAgentState(s.ctx, principal.accountId, c.params.id, action)
  }
  const moveHooks = (summary: string) => ({ params: AgentParams, response: { 200: Agent }, detail: { summary } })
  return new Elysia()
    .use(bearerAuth)
    .post(
      '/v1/agents',
      async (c) => {
        const principal = await h.operatorIn(c)
        const { set, body } = c
        set.status = 201
        return createAgentFor(s.ctx, principal.accountId, body)
      },
      { parse: h.json, body: CreateAgentBody, transform: rejectUnknownFields(CreateAgentBody), response: { 201: CreatedAgent }, detail: { summary: 'Create a named agent token (shown once) with its own caps and allowlist' } },
    )
    .get(
      '/v1/agents',
      async (c) => {
        const principal = await h.operatorIn(c)
        return { agents: await readAgents(s.ctx, principal.accountId) }
      },
      { response: { 200: AgentList }, detail: { summary: "List the account's agent tokens with today's spend" } },
    )
    .post('/v1/agents/:id/kill', move('kill'), moveHooks('Kill an agent token: its calls answer AGENT_KILLED until revived (repeating is a no-op)'))
    .post('/v1/agents/:id/revive', move('revive'), moveHooks('Revive a killed agent token; a revoked one → CONFLICT'))
    .delete('/v1/agents/:id', move('revoke'), moveHooks('Revoke an agent token for good: its calls answer AGENT_REVOKED'))
}
