import { Elysia } from 'elysia'
import { admitFounder } from '../../auth/founder'
import { bearerAuth, http, type Http } from '../../http'
import type { Services } from '../../services'
import { DeadLetterDiscarded, DeadLetterList, DeadLetterParams, DeadLetterQuery, DeadLetterReplayed } from './model'
import { discardDead, listDead, replayDead } from './service'

/** Founder surfaces for outbox entries Postgres refused (Authorization: Bearer $ADMIN_TOKEN). */
export const deadLetterRoutes = (s: Services, h: Http = http(s)) => {
  const founder = (bearer: string | undefined, request: Request, server: Parameters<Http['ip']>[1]) =>
    admitFounder(s.cfg.ADMIN_TOKEN, s.guard, bearer, h.ip(request, server))
  return new Elysia()
    .use(bearerAuth)
    .get(
      '/admin/dead-letters',
      async ({ bearer, request, server, query }) => {
        await founder(bearer, request, server)
        return listDead(s, query.limit)
      },
      { query: DeadLetterQuery, response: { 200: DeadLetterList }, detail: { summary: 'Founder: outbox entries Postgres refused, with the error, oldest first' } },
    )
    .post(
      '/admin/dead-letters/:id/replay',
      async ({ bearer, request, server, params }) => {
        await founder(bearer, request, server)
        return replayDead(s, params.id)
      },
      { params: DeadLetterParams, response: { 200: DeadLetterReplayed }, detail: { summary: 'Founder: put a dead letter back in its outbox (the flusher retries it; refused again, it is dead-lettered again)' } },
    )
    .delete(
      '/admin/dead-letters/:id',
      async ({ bearer, request, server, params }) => {
        await founder(bearer, request, server)
        return discardDead(s, params.id)
      },
      { params: DeadLetterParams, response: { 200: DeadLetterDiscarded }, detail: { summary: 'Founder: discard a dead letter after review' } },
    )
}
