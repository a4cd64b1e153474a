/**
 * The native passthrough proxy (`ANY /proxy/{provider}/{path}`) and its agent-readable route list
 * (`GET /llms-full.txt`). The body is never parsed: it streams to the provider as it arrives.
 */
import { Elysia } from 'elysia'
import { bearerAuth, http, type Http } from '../http'
import type { Services } from '../services'
import { llmsFullText } from './llms'
import { rawTarget } from './raw-target'
import { proxyRequest } from './service'

const PATH = '/proxy/:provider/*'

export const proxyRoutes = (s: Services, h: Http = http(s)) => {
  const handler = ({ request, server }: { request: Request; server: Parameters<Http['ip']>[1] }) =>
    proxyRequest(s, request, { raw: rawTarget(request), ip: h.ip(request, server) })
  const hook = (method: string) => ({
    parse: 'none' as const,
    detail: {
      summary: `Native passthrough (${method}): the provider's own API shape, provider key injected, governance and debit before forwarding`,
    },
  })
  let text: string | null = null
  return new Elysia()
    .use(bearerAuth)
    .get(PATH, handler, hook('GET'))
    .post(PATH, handler, hook('POST'))
    .put(PATH, handler, hook('PUT'))
    .patch(PATH, handler, hook('PATCH'))
    .delete(PATH, handler, hook('DELETE'))
    .get(
      '/llms-full.txt',
      async ({ bearer, request, server, set }) => {
        set.headers = { ...(await h.anonymous(request, server, bearer)), 'content-type': 'text/plain; charset=utf-8' }
        return (text ??= llmsFullText(s.catalog, s.cfg))
      },
      { detail: { summary: 'Proxy routes, prices, auth and SDK base URLs, written for an LLM agent' } },
    )
}
