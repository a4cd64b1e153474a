/**
 * Request-level observability: a request id, the HTTP counters and one JSON log line per request.
 *
 * - The id is the caller's `X-Request-Id` when it is a plain short token (so a trace can cross a
 *   load balancer), else a new random one; it is echoed in the `X-Request-Id` response header and
 *   named in INTERNAL error bodies, so a user's report finds the log line.
 * - The log line has method, route template, status, error code and milliseconds to the response
 *   head. Never the raw path or query (vault codes and token-rotation codes travel in them), never
 *   headers or bodies.
 * - Counting is in memory only: no Redis or Postgres work per request.
 */
import { Elysia } from 'elysia'
import { pooledId } from './auth/tokens'
import type { ApiError } from './errors'
import type { Services } from './services'

const ID_RE = /^[A-Za-z0-9._-]{1,64}$/

interface RequestInfo {
  id: string
  started: number
  route?: string
  code?: string
  /** The feature a NOT_CONFIGURED answer names: its alarm is raised when the answer is counted. */
  feature?: string
  /** The answer was made with its X-Request-Id already (idForAnswer): its headers are left alone. */
  idInAnswer?: boolean
}

const info = new WeakMap<Request, RequestInfo>()

/**
 * Notes the error code a request is answered with, for `pab_api_errors_total` and the log line.
 * Called wherever an error is rendered (the app's onError, the body-size refusal before routing,
 * the pages that answer their own errors), so every refusal counts, not only routed ones.
 * Pass the ApiError itself where there is one: a NOT_CONFIGURED answer then signals the operator.
 */
export function noteError(request: Request, err: ApiError | string): void {
  const i = info.get(request)
  if (!i) return
  i.code = typeof err === 'string' ? err : err.code
  if (typeof err !== 'string' && err.code === 'NOT_CONFIGURED') i.feature = String(err.context.feature)
}

/**
 * The id for the X-Request-Id of an answer its handler builds itself (the paid call's), which the
 * app then sends as it is: reading a Response's headers back to add it cost each call ~0.5 µs.
 * Undefined for a Request that never went through the app (no id to send).
 */
export function idForAnswer(request: Request): string | undefined {
  const i = info.get(request)
  if (!i) return undefined
  i.idInAnswer = true
  return i.id
}

/** The id of a request being answered (a fresh one for a Request that never went through the app). */
export function requestId(request: Request): string {
  return info.get(request)?.id ?? pooledId(8)
}

/**
 * Global hooks that note the matched route template of each request (and of a failed one, when it
 * got that far). `use` it before the routes: Elysia applies a hook only to routes registered after it.
 */
export const observeRoutes = () =>
  new Elysia({ name: 'observe-routes' })
    .onTransform({ as: 'global' }, ({ request, route }) => {
      const i = info.get(request)
      if (i) i.route = route
    })
    .onError({ as: 'global' }, ({ request, route }) => {
      const i = info.get(request)
      if (i) i.route ??= route
    })

interface Handles {
  handle(request: Request): Promise<Response>
}

/**
 * The route template a request answered without the router is counted and logged under: noted by
 * its answer where the router would note it, after the arrival checks (one refused on arrival is
 * 'unmatched', as routed).
 */
export function noteRoute(request: Request, route: string): void {
  const i = info.get(request)
  if (i) i.route = route
}

/**
 * Requests answered without the app's router (the proxy's, the paid call's: app.ts): `take` answers
 * how, or null for the next one or the router to answer.
 */
export interface DirectRoute {
  take(request: Request): (() => Promise<Response>) | null
}

/** Wraps `app.handle` (what tests and the listener call) with the id, the counters and the log line. */
export function instrument<A extends Handles>(app: A, s: Pick<Services, 'metrics' | 'log' | 'notConfigured'>, direct: readonly DirectRoute[] = []): A {
  const inner = app.handle.bind(app)
  app.handle = async (request: Request) => {
    const given = request.headers.get('x-request-id')
    const i: RequestInfo = { id: given && ID_RE.test(given) ? given : pooledId(8), started: performance.now() }
    info.set(request, i)
    let taken: (() => Promise<Response>) | null = null
    for (const d of direct) if ((taken = d.take(request))) break
    const res = await (taken ? taken() : inner(request))
    const ms = performance.now() - i.started
    const route = i.route ?? 'unmatched'
    const method = request.method
    const status = res.status
    s.metrics.httpSeries(method, route, status).answered(ms / 1000)
    if (i.code) s.metrics.apiErrors.inc({ code: i.code })
    if (i.code === 'RATE_LIMITED') s.metrics.rateLimited.inc({ route })
    if (i.feature) s.notConfigured.raise(i.feature)
    if (!i.idInAnswer) {
      try {
        // A proxied response keeps the provider's own X-Request-Id (the OpenAI SDK reads it, and the
        // provider's support asks for it); x-pab-call-id names the request on our side.
        if (!res.headers.has('x-request-id')) res.headers.set('x-request-id', i.id)
      } catch {
        // A Response with immutable headers (none of ours today) simply goes without it.
      }
    }
    if (s.log.writes) s.log.info('request', { request_id: i.id, method, route, status, ...(i.code ? { error: i.code } : {}), ms: Math.round(ms * 10) / 10 })
    return res
  }
  return app
}
