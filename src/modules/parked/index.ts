import { Elysia } from 'elysia'
import { admitFounder } from '../../auth/founder'
import { bearerAuth, http, type Http } from '../../http'
import type { Services } from '../../services'
import { ParkedDecision, ParkedList, ParkedParams } from './model'
import { approveParked, listParked, rejectParked } from './service'

/** Founder surfaces for parked over-cap card payments (Authorization: Bearer $ADMIN_TOKEN). */
export const parkedRoutes = (s: Services, h: Http = http(s)) => {
  const founder = (bearer: string | undefined, request: Request, server: Parameters<Http['ip']>[1]) =>
    admitFounder(s.cfg.ADMIN_TOKEN, s.guard, bearer, h.ip(request, server))
  return new Elysia()
    .use(bearerAuth)
    .get(
      '/admin/parked',
      async ({ bearer, request, server }) => {
        await founder(bearer, request, server)
        return listParked(s)
      },
      { response: { 200: ParkedList }, detail: { summary: 'Founder: card payments parked because they would pass the balance cap' } },
    )
    .post(
      '/admin/parked/:id/approve',
      async ({ bearer, request, server, params }) => {
        await founder(bearer, request, server)
        return approveParked(s, params.id)
      },
      { params: ParkedParams, response: { 200: ParkedDecision }, detail: { summary: 'Founder: credit a parked payment (overrides the balance cap)' } },
    )
    .post(
      '/admin/parked/:id/reject',
      async ({ bearer, request, server, params }) => {
        await founder(bearer, request, server)
        return rejectParked(s, params.id)
      },
      { params: ParkedParams, response: { 200: ParkedDecision }, detail: { summary: 'Founder: refund a parked payment at the processor' } },
    )
}
