/**
 * The native passthrough proxy (`ANY /proxy/{provider}/{path}`) and its agent-readable route list
 * (`GET /llms-full.txt`). The body is never parsed: it streams to the provider as it arrives.
 */
import { Elysia } from 'elysia'
import { ApiError } from '../errors'
import { bearerAuth, http, type Http, type MaybeServer } from '../http'
import { noteError } from '../observe'
import type { Services } from '../services'
import { ProviderKeys } from '../vault/provider-key'
import { llmsFullText } from './llms'
import { PROXY_PREFIX, resolveProxyTarget, splitUrl, type ProxyTarget } from './path'
import { rawPathOf } from './raw-target'
import { proxyRequest } from './service'

/** The proxy's route, as Elysia knows it and as the request counters name it. */
export const PROXY_ROUTE = '/proxy/:provider/*'
/** The methods the proxy routes take; any other goes to the router (and its 404), as before. */
const METHODS: ReadonlySet<string> = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'])

/**
 * The proxy's endpoint: its Elysia routes (`routes`), and the same handler reached without the
 * router (`direct`), which app.ts takes for every proxied request that the routes would serve.
 * Why: Elysia's dispatch — its router, the global hooks, the derive, the error chain — cost a
 * proxied request ~0.1 ms before its first byte and a few µs under load (flat JSON 1.04–1.07×
 * without it; docs/decisions.md, issue 17, fifteenth round), and the proxy uses none of what they
 * give a routed request (no parsed body, no schema, no text checks). The answers are the routes': test/http/proxy.direct.test.ts holds the two to it.
 */
export function proxyEndpoint(s: Services, h: Http = http(s)) {
  const targets = new WeakMap<Request, ProxyTarget>()
  // Read through `s` on each request: the vault's lookup may be swapped in after boot (and is in tests).
  const keys = new ProviderKeys(() => s.vaultedKey, s.log)
  const resolve = (request: Request) => resolveProxyTarget(request.url, rawPathOf(request), s.catalog.providers)
  const target = (request: Request) => targets.get(request) ?? resolve(request)
  const serve = (request: Request, server: MaybeServer, t: ProxyTarget = target(request)) =>
    proxyRequest(s, keys, request, { target: t, ip: () => h.ip(request, server) })
  const handler = ({ request, server }: { request: Request; server: MaybeServer }) => serve(request, server)
  const hook = (method: string) => ({
    parse: 'none' as const,
    detail: {
      summary: `Native passthrough (${method}): the provider's own API shape, provider key injected, governance and debit before forwarding`,
    },
  })
  let text: string | null = null
  const routes = () =>
    new Elysia()
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
      .get(PROXY_ROUTE, handler, hook('GET'))
      .post(PROXY_ROUTE, handler, hook('POST'))
      .put(PROXY_ROUTE, handler, hook('PUT'))
      .patch(PROXY_ROUTE, handler, hook('PATCH'))
      .delete(PROXY_ROUTE, handler, hook('DELETE'))
      .get(
        '/llms-full.txt',
        async ({ bearer, request, server, set }) => {
          set.headers = { ...(await h.anonymous(request, server, bearer)), 'content-type': 'text/plain; charset=utf-8' }
          return (text ??= llmsFullText(s.catalog, s.cfg))
        },
        { detail: { summary: 'Proxy routes, prices, auth and SDK base URLs, written for an LLM agent' } },
      )
  /**
   * The target of a request the proxy routes would serve, or null for the router to answer: a
   * method they take, and a path that resolves to a sub-path of a proxied provider (`/proxy/<id>/…`).
   * A path that does not resolve (its refusal included) goes the routed way and gets the same answer.
   */
  const direct = (request: Request): ProxyTarget | null => {
    if (!METHODS.has(request.method)) return null
    // Every other route's request leaves here, before any parsing (a refusal thrown costs a stack).
    const path = splitUrl(request.url).path
    if (!path.startsWith(PROXY_PREFIX) || path.indexOf('/', PROXY_PREFIX.length) === -1) return null
    try {
      return resolve(request)
    } catch {
      return null
    }
  }
  return { routes, direct, serve }
}
