import { Elysia } from 'elysia'
import { bearerAuth, http, type Http } from '../../http'
import { rejectUnknownFields } from '../../edge/strict-body'
import type { Services } from '../../services'
import { approveProposal, createProposal, declineProposal, getProposal, listProposals, type NewProposal } from '../../proposals/proposals'
import { proposalDeps } from '../../proposals/deps'
import type { ProposalStatus } from '../../proposals/record'
import { ApproveBody, ApproveObject, DecisionBody, DecisionObject, NewProposalBody, Proposal, ProposalList, ProposalParams, ProposalQuery } from './model'

/** Proposals (docs/api.md §11): any token of the account proposes and reads; only the operator decides. */
export const proposalRoutes = (s: Services, h: Http = http(s)) => {
  const d = proposalDeps(s)
  return new Elysia()
    .use(bearerAuth)
    .post(
      '/v1/proposals',
      async (c) => {
        const principal = await h.admitIn(c)
        const { set, body } = c
        const out = await createProposal(d, principal, body as NewProposal)
        set.status = 201
        return out
      },
      {
        parse: h.json,
        body: NewProposalBody,
        transform: rejectUnknownFields(NewProposalBody),
        response: { 201: Proposal },
        detail: { summary: 'Ask the operator for more room (a higher cap or budget, a pattern, a top-up); at most 10 pending per agent, 24 h to decide' },
      },
    )
    .get(
      '/v1/proposals',
      async (c) => {
        const principal = await h.admitIn(c)
        return { proposals: await listProposals(d, principal, c.query.status as ProposalStatus | undefined) }
      },
      { query: ProposalQuery, response: { 200: ProposalList }, detail: { summary: "The account's proposals, newest first (an agent token: its own)" } },
    )
    .get(
      '/v1/proposals/:id',
      async (c) => {
        const principal = await h.admitIn(c)
        return getProposal(d, principal, c.params.id)
      },
      { params: ProposalParams, response: { 200: Proposal }, detail: { summary: "One proposal and its decision (the proposal's status_url)" } },
    )
    .post(
      '/v1/proposals/:id/approve',
      async (c) => {
        const principal = await h.admitIn(c)
        return approveProposal(d, principal.accountId, c.params.id, c.body?.note ?? '', 'api', c.body?.for_s)
      },
      {
        parse: h.json,
        params: ProposalParams,
        body: ApproveBody,
        transform: rejectUnknownFields(ApproveObject),
        response: { 200: Proposal },
        detail: { summary: 'Approve (operator): applied at once with the checks of PUT /v1/policies or POST /v1/topup; with for_s the raise lapses by itself then; not pending → CONFLICT' },
      },
    )
    .post(
      '/v1/proposals/:id/decline',
      async (c) => {
        const principal = await h.admitIn(c)
        return declineProposal(d, principal.accountId, c.params.id, c.body?.note ?? '')
      },
      { parse: h.json, params: ProposalParams, body: DecisionBody, transform: rejectUnknownFields(DecisionObject), response: { 200: Proposal }, detail: { summary: 'Decline (operator): nothing changes; not pending → CONFLICT' } },
    )
}
