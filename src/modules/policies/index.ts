import { Elysia } from 'elysia'
import { ApiError } from '../../errors'
import { bearerAuth, http, type Http } from '../../http'
import { rejectUnknownFields } from '../../edge/strict-body'
import type { Services } from '../../services'
import { Policies, PoliciesPatch } from './model'
import { policiesOf, putPolicies } from '../../governance/policy-views'

/**
 * An agent id Elysia's normaliser would drop before the handler sees it: a `__proto__` key of
 * `agents` (JSON.parse makes it an own key; the cleaned copy sets a prototype instead), so the
 * request answered 200 having changed nothing. No agent has that id: NOT_FOUND, as any unknown id.
 */
const refuseDroppedAgentIds = ({ body }: { body: unknown }) => {
  const agents = (body as { agents?: unknown } | null)?.agents
  if (agents && typeof agents === 'object' && Object.hasOwn(agents, '__proto__'))
    throw new ApiError('NOT_FOUND', { resource: 'agent', agent_id: '__proto__' })
}

export const policyRoutes = (s: Services, h: Http = http(s)) =>
  new Elysia()
    .use(bearerAuth)
    .get(
      '/v1/policies',
      async (c) => {
        const principal = await h.admitIn(c)
        return policiesOf(s.ctx, principal)
      },
      { response: { 200: Policies }, detail: { summary: 'Caps and allowlists of the account and its agents (an agent token sees its own)' } },
    )
    .put(
      '/v1/policies',
      async (c) => {
        const principal = await h.admitIn(c)
        const { body } = c
        return putPolicies(s.ctx, principal.accountId, body)
      },
      {
        parse: h.json,
        body: PoliciesPatch,
        transform: [rejectUnknownFields(PoliciesPatch), refuseDroppedAgentIds],
        response: { 200: Policies },
        detail: { summary: 'Change caps and allowlists (operator); applied at once, all or nothing; answers the full policies' },
      },
    )
