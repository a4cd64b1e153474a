/**
 * createApp(services) → the Elysia app. Tests drive it with app.handle(new Request(...)).
 * One onError turns every failure into the spec's flat error body.
 */
import { TypeBoxError } from '@sinclair/typebox'
import { Elysia, ERROR_CODE, ValidationError } from 'elysia'
import { ApiError } from './errors'
import { dottedPath, schemaRefusal } from './schema-check'
import type { Services } from './services'
import { accountRoutes } from './modules/account'
import { CALL_ROUTE, callEndpoint } from './modules/call'
import { catalogRoutes } from './modules/catalog'
import { publicRoutes } from './modules/public'
import { signupRoutes } from './modules/signup'
import { vaultRoutes } from './modules/vault'
import { agentRoutes } from './modules/agents'
import { policyRoutes } from './modules/policies'
import { supportRoutes } from './modules/support'
import { adminRoutes } from './modules/admin'
import { reconciliationRoutes } from './modules/reconciliation'
import { deadLetterRoutes } from './modules/dead-letters'
import { PROXY_ROUTE, proxyEndpoint } from './proxy'
import { rawPathOf } from './proxy/raw-target'
import { mandateRoutes } from './modules/mandate'
import { consentRoutes } from './modules/mandate/consent'
import { topupRoutes } from './modules/topup'
import { parkedRoutes } from './modules/parked'
import { webhookRoutes } from './modules/webhooks'
import { operatorRoutes } from './modules/operator'
import { proposalRoutes } from './modules/proposals'
import { runRoutes } from './modules/runs'
import { buildOpenApi } from './openapi'
import { instrument, noteError, noteRoute, observeRoutes, requestId } from './observe'
import { metricsRoutes } from './modules/metrics'
import { edgeChecks, passEdge, reachedHandler } from './edge/index'
import { refusalBeforeRequest } from './admission'
import { bearerOf, http, type MaybeServer } from './http'
import { bodyTooLarge } from './edge/body'
import { errorFields } from './log'
import { demoRoutes } from './modules/demo'
import { ledgerRoutes } from './modules/ledger'
import { consoleErrorPage, consoleRoutes } from './modules/console'
import { browserSurface, errorPage, wantsJson } from './pages/html'
import { mcpRoutes } from './modules/mcp'
import { oauthRoutes } from './modules/oauth'
import { authorizeRoutes } from './modules/console/authorize'

/**
 * `proxyRouted`, `callRouted`: the proxy's requests, the paid calls, through Elysia's router as
 * well, instead of their direct paths (test/http/proxy.direct.test.ts and call.direct.test.ts hold
 * the direct paths' answers to the routed ones).
 */
export function createApp(s: Services, o: { proxyRouted?: boolean; callRouted?: boolean } = {}) {
  let openapi: unknown = null
  const routes: { routes: Parameters<typeof buildOpenApi>[0]['routes'] } = { routes: [] }
  /** Whatever a handler or hook threw, as the ApiError the client gets. */
  function apiErrorOf(code: string | number, error: unknown, request: Request): ApiError {
    if (error instanceof ApiError) return error
    if (code === 'VALIDATION') return validationError(error as ValidationError)
    // A route's own parser (edge/body.ts) refuses with an ApiError, which Elysia wraps.
    if (code === 'PARSE') return (error as Error).cause instanceof ApiError ? ((error as Error).cause as ApiError) : new ApiError('BAD_REQUEST', { field: 'body', expected: 'valid JSON' })
    if (code === 'NOT_FOUND') return new ApiError('NOT_FOUND', { resource: 'route' })
    const id = requestId(request)
    s.log.error('unhandled', { request_id: id, path: new URL(request.url).pathname, ...errorFields(error) })
    return new ApiError('INTERNAL', { request_id: id })
  }
  const h = http(s)
  const proxy = proxyEndpoint(s, h)
  const call = callEndpoint(s, h)
  /** The app's answer to what a route's hooks or handler threw (Elysia's `code` names its own errors). */
  async function errorAnswer(code: string | number, error: unknown, request: Request, route: string, server: MaybeServer): Promise<Response> {
    let err = apiErrorOf(code, error, request)
    // Auth first (admission.ts): a refusal raised before the handler admitted the caller waits for
    // the admission. Were Redis down, the refusal itself is still the truest answer.
    if (err.status < 500 && !reachedHandler(request)) err = (await refusalBeforeRequest(s, h, route, request, server).catch(() => null)) ?? err
    noteError(request, err)
    return refusalAnswer(request, err)
  }
  const app = new Elysia()
    .use(observeRoutes())
    .use(edgeChecks(() => routes.routes))
    .onRequest(({ request }) => declaredTooLarge(request))
    .onError(({ code, error, request, route, server }) => errorAnswer(code, error, request, route, server))
    .use(metricsRoutes(s))
    .use(signupRoutes(s))
    .use(catalogRoutes(s))
    .use(call.routes())
    .use(accountRoutes(s))
    .use(vaultRoutes(s))
    .use(agentRoutes(s))
    .use(policyRoutes(s))
    .use(proposalRoutes(s))
    .use(runRoutes(s))
    .use(supportRoutes(s))
    .use(adminRoutes(s))
    .use(reconciliationRoutes(s))
    .use(deadLetterRoutes(s))
    .use(proxy.routes())
    .use(mandateRoutes(s))
    .use(consentRoutes(s))
    .use(topupRoutes(s))
    .use(parkedRoutes(s))
    .use(webhookRoutes(s))
    .use(operatorRoutes(s))
    .use(demoRoutes(s))
    .use(ledgerRoutes(s))
    .use(oauthRoutes(s))
    .use(authorizeRoutes(s))
    .use(consoleRoutes(s))
    .use(mcpRoutes(s, () => routes.routes))
    .use(publicRoutes(s, () => (openapi ??= buildOpenApi(routes))))
  routes.routes = app.routes as unknown as typeof routes.routes
  /** A body declared past the limit, refused on arrival, before any route or hook reads it. */
  function declaredTooLarge(request: Request): Response | undefined {
    const len = Number(request.headers.get('content-length') ?? '0')
    if (len > s.cfg.MAX_BODY_BYTES) {
      noteError(request, 'BAD_REQUEST')
      return refusalAnswer(request, bodyTooLarge(s.cfg.MAX_BODY_BYTES))
    }
  }
  /**
   * A proxied request the proxy's routes would serve, served without the router (proxy/index.ts):
   * the work of the hooks it would pass, in their order — the body's declared length, the target
   * (resolved by `direct`), the route noted (as the router notes it), the handler, and the app's
   * onError for what it throws (a proxied request has always reached its handler by then, so no
   * admission comes first).
   */
  const directProxy = (request: Request) => {
    const target = proxy.direct(request)
    if (!target) return null
    return async (): Promise<Response> => {
      const refused = declaredTooLarge(request)
      if (refused) return refused
      noteRoute(request, PROXY_ROUTE)
      try {
        return await proxy.serve(request, app.server, target)
      } catch (e) {
        const err = apiErrorOf('UNKNOWN', e, request)
        noteError(request, err)
        return err.toResponse()
      }
    }
  }
  /**
   * A paid call served without the router (modules/call `direct`): the hooks it would pass, in
   * their order — the body's declared length; the route noted, as the router notes it past that;
   * the edge's checks of its query and slug (its body is read by the handler, so there is none
   * parsed to check); the bearer; the handler; and the app's
   * onError for what any of them throws, with the code Elysia would give it. A raw target the
   * proxy's onRequest judges (proxy/raw-target.ts) keeps the router, as does a slug it decodes.
   */
  const directCall = (request: Request) => {
    const slug = call.direct(request)
    if (slug === null || typeof rawPathOf(request) === 'string') return null
    return async (): Promise<Response> => {
      const refused = declaredTooLarge(request)
      if (refused) return refused
      noteRoute(request, CALL_ROUTE)
      try {
        passEdge(request, { slug }, NO_LINES)
        return await call.serve(bearerOf(request.headers.get('authorization')), slug, request, app.server)
      } catch (e) {
        return errorAnswer(elysiaCode(e), e, request, CALL_ROUTE, app.server)
      }
    }
  }
  return instrument(app, s, [...(o.callRouted ? [] : [{ take: directCall }]), ...(o.proxyRouted ? [] : [{ take: directProxy }])])
}

const NO_LINES: ReadonlySet<string> = new Set()

/** The `code` Elysia's error chain hands onError for an error a route's hooks or handler threw. */
function elysiaCode(e: unknown): string | number {
  if (e instanceof TypeBoxError) return 'VALIDATION'
  const x = e as { code?: string | number; [ERROR_CODE]?: string | number } | null | undefined
  return x?.code ?? x?.[ERROR_CODE] ?? 'UNKNOWN'
}

export type App = ReturnType<typeof createApp>

/**
 * A refusal made before the route's handler ran (onError, the body-size check), answered as the
 * route answers its own errors: a browser page is shown a page, not the API's JSON. The console's
 * errors are always pages (it has no JSON clients: it rides a session cookie); the other pages
 * (pages/html.ts pageAnswer) give the JSON error body to a client that asks for JSON and not HTML.
 * The API (/v1, /mcp, the proxy, ...) keeps its JSON whatever the Accept header says.
 */
function refusalAnswer(request: Request, err: ApiError): Response {
  const surface = browserSurface(new URL(request.url).pathname)
  if (surface === 'console') return consoleErrorPage(err)
  if (surface === 'page' && !wantsJson(request)) return errorPage(err)
  return err.toResponse()
}

/** TypeBox validation failure → BAD_REQUEST naming the field and the expected shape. */
function validationError(e: ValidationError): ApiError {
  const first = e.all?.[0] as { path?: string; message?: string; schema?: Record<string, unknown> } | undefined
  const field = first?.path ? dottedPath(first.path) : e.type
  return schemaRefusal(field || e.type || 'body', first?.schema, first?.message)
}
