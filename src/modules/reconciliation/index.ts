import { Elysia } from 'elysia'
import { admitFounder } from '../../auth/founder'
import { rejectUnknownFields } from '../../edge/strict-body'
import { bearerAuth, http, type Http } from '../../http'
import type { Services } from '../../services'
import { ReconciliationList, ReconciliationQuery, ReconciliationRunBody, ReconciliationRunObject, ReconciliationRunResult } from './model'
import { listReconciliation, runReconciliation } from './service'

/** Founder surfaces of the reconciliation with the providers' bills (docs/api.md §13d). */
export const reconciliationRoutes = (s: Services, h: Http = http(s)) => {
  const founder = (bearer: string | undefined, request: Request, server: Parameters<Http['ip']>[1]) =>
    admitFounder(s.cfg.ADMIN_TOKEN, s.guard, bearer, h.ip(request, server))
  return new Elysia()
    .use(bearerAuth)
    .get(
      '/admin/reconciliation',
      async ({ bearer, request, server, query }) => {
        await founder(bearer, request, server)
        return listReconciliation(s, query)
      },
      { query: ReconciliationQuery, response: { 200: ReconciliationList }, detail: { summary: "Founder: each UTC day, provider and model — our metered tokens, the provider's usage report, the difference and the drift" } },
    )
    .post(
      '/admin/reconciliation/run',
      async ({ bearer, request, server, body }) => {
        await founder(bearer, request, server)
        return runReconciliation(s, body ?? undefined)
      },
      {
        parse: h.json,
        body: ReconciliationRunBody,
        transform: rejectUnknownFields(ReconciliationRunObject),
        response: { 200: ReconciliationRunResult },
        detail: { summary: 'Founder: reconcile one UTC day (default: the last due) for every reconciled provider now' },
      },
    )
}
