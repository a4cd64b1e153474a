import { Elysia } from 'elysia'
import { admitFounder } from '../../auth/founder'
import { bearerAuth, http, type Http } from '../../http'
import { rejectUnknownFields } from '../../edge/strict-body'
import type { Services } from '../../services'
import { SupportBody, SupportCreated, SupportParams, SupportPatch, SupportProblem } from './model'
import { fileProblem, moveProblem, problemView } from '../../support/problems'
import { reachOf } from '../../account/views'

export const supportRoutes = (s: Services, h: Http = http(s)) =>
  new Elysia()
    .use(bearerAuth)
    .post(
      '/v1/support',
      async (c) => {
        const principal = await h.admitIn(c)
        const { set, body } = c
        set.status = 201
        return fileProblem(s, principal, body)
      },
      { parse: h.json, body: SupportBody, transform: rejectUnknownFields(SupportBody), response: { 201: SupportCreated }, detail: { summary: 'File a structured problem (metadata only); poll its status_url' } },
    )
    .get(
      '/v1/support/:id',
      async (c) => {
        const principal = await h.admitIn(c)
        const { params } = c
        return problemView(s.db.db, params.id, principal.accountId, await reachOf(s, principal))
      },
      { params: SupportParams, response: { 200: SupportProblem }, detail: { summary: 'A support problem of this account: status and updates' } },
    )
    // The founder's side of the same state machine lives with it.
    .patch(
      '/admin/support/:id',
      async ({ bearer, request, server, params, body }) => {
        await admitFounder(s.cfg.ADMIN_TOKEN, s.guard, bearer, h.ip(request, server))
        return moveProblem(s, params.id, body)
      },
      {
        params: SupportParams,
        parse: h.json,
        body: SupportPatch,
        transform: rejectUnknownFields(SupportPatch),
        response: { 200: SupportProblem },
        detail: { summary: 'Founder: move a support problem forward (open → acknowledged → resolved) and/or add a note' },
      },
    )
