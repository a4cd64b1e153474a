/**
 * The native passthrough proxy (`ANY /proxy/{provider}/{path}`) and its agent-readable route list
 * (`GET /llms-full.txt`). The body is never parsed: it streams to the provider as it arrives.
 */
import { Elysia } from 'elysia'
import { ApiError } from '../errors'
import { bearerAuth, http, type Http } from '../http'
import { noteError } from '../observe'
import type { Services } from '../services'
import { ProviderKeys } from '../vault/provider-key'
import { llmsFullText } from './llms'
import { PROXY_PREFIX, resolveProxyTarget, splitUrl, type ProxyTarget } from './path'
import { rawPathOf } from './raw-target'
import { proxyRequest } from './service'

const PATH = '/proxy/:provider/*'

export const proxyRoutes = (s: Services, h: Http = http(s)) => {
  const targets = new WeakMap<Request, ProxyTarget>()
  // Read through `s` on each request: the vault's lookup may be swapped in after boot (and is in tests).
  const keys = new ProviderKeys(() => s.vaultedKey, s.log)
  const resolve = (request: Request) => resolveProxyTarget(request.url, rawPathOf(request), s.catalog.providers)
  const target = (request: Request) => targets.get(request) ?? resolve(request)
  const handler = ({ request, server }: { request: Request; server: Parameters<Http['ip']>[1] }) =>
    proxyRequest(s, keys, request, { target: target(request), ip: () => h.ip(request, server) })
  const hook = (method: string) => ({
    parse: 'none' as const,
    detail: {
      summary: `Native passthrough (${method}): the provider's own API shape, provider key injected, governance and debit before forwarding`,
    },
  })
  let text: string | null = null
  return new Elysia()
    // Before routing, because the router only knows the resolved URL: a raw target under /proxy/
    // that a URL parser would move elsewhere (`/proxy/openai/%2e%2e/admin` → `/proxy/admin`), or a
    // target elsewhere that it would move under /proxy/, is answered here, not by another route.
    .onRequest(({ request }) => {
      const raw = rawPathOf(request)
      if (typeof raw !== 'string' && !splitUrl(request.url).path.startsWith(PROXY_PREFIX)) return
      // A refusal is thrown and rendered by Elysia from the ApiError itself (the app's onError does not
      // run for errors of onRequest hooks), so it is noted for the error counters here.
      try {
        targets.set(request, resolve(request))
      } catch (e) {
        if (e instanceof ApiError) noteError(request, e)
        throw e
      }
    })
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

