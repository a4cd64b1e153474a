import { Elysia } from 'elysia'
import { changeAgentState, readAgents, type AgentAction } from '../../governance/agents'
import { bearerAuth, http, type Http } from '../../http'
import { rejectUnknownFields } from '../../lib/strict-body'
import type { Services } from '../../services'
import { Agent, AgentList, AgentParams, CreateAgentBody, CreatedAgent } from './model'
import { createAgentFor } from './service'

/** Operator-only (an agent token → FORBIDDEN): agents cannot mint or free each other. */
export const agentRoutes = (s: Services, h: Http = http(s)) => {
  const move = (action: AgentAction) => async ({ bearer, request, server, set, params }: RouteCtx) => {
    const { principal, headers } = await h.operator(bearer, request, server)
    set.headers = headers
    return changeAgentState(s.ctx, principal.accountId, params.id, action)
  }
  const moveHooks = (summary: string) => ({ params: AgentParams, response: { 200: Agent }, detail: { summary } })
  return new Elysia()
    .use(bearerAuth)
    .post(
      '/v1/agents',
      async ({ bearer, request, server, set, body }) => {
        const { principal, headers } = await h.operator(bearer, request, server)
        set.headers = headers
        set.status = 201
        return createAgentFor(s.ctx, principal.accountId, body)
      },
      { body: CreateAgentBody, transform: rejectUnknownFields(CreateAgentBody), response: { 201: CreatedAgent }, detail: { summary: 'Create a named agent token (shown once) with its own caps and allowlist' } },
    )
    .get(
      '/v1/agents',
      async ({ bearer, request, server, set }) => {
        const { principal, headers } = await h.operator(bearer, request, server)
        set.headers = headers
        return { agents: await readAgents(s.ctx, principal.accountId) }
      },
      { response: { 200: AgentList }, detail: { summary: "List the account's agent tokens with today's spend" } },
    )
    .post('/v1/agents/:id/kill', move('kill'), moveHooks('Kill an agent token: its calls answer AGENT_KILLED until revived (repeating is a no-op)'))
    .post('/v1/agents/:id/revive', move('revive'), moveHooks('Revive a killed agent token; a revoked one → CONFLICT'))
    .delete('/v1/agents/:id', move('revoke'), moveHooks('Revoke an agent token for good: its calls answer AGENT_REVOKED'))
}

interface RouteCtx {
  bearer: string | undefined
  request: Request
  server: Parameters<Http['operator']>[2]
  set: { headers: Record<string, string | number> }
  params: { id: string }
}
