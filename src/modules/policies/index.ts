import { Elysia } from 'elysia'
import { bearerAuth, http, type Http } from '../../http'
import { rejectUnknownFields } from '../../edge/strict-body'
import type { Services } from '../../services'
import { Policies, PoliciesPatch } from './model'
import { policiesOf, putPolicies } from '../../governance/policy-views'

export const policyRoutes = (s: Services, h: Http = http(s)) =>
  new Elysia()
    .use(bearerAuth)
    .get(
      '/v1/policies',
      async (c) => {
        const principal = await h.memberIn(c)
        return policiesOf(s.ctx, principal)
      },
      { response: { 200: Policies }, detail: { summary: 'Caps and allowlists of the account and its agents (an agent token sees its own)' } },
    )
    .put(
      '/v1/policies',
      async (c) => {
        const principal = await h.operatorIn(c)
        const { body } = c
        return putPolicies(s.ctx, principal.accountId, body)
      },
      {
        parse: h.json,
        body: PoliciesPatch,
        transform: rejectUnknownFields(PoliciesPatch),
        response: { 200: Policies },
        detail: { summary: 'Change caps and allowlists (operator); applied at once, all or nothing; answers the full policies' },
      },
    )
