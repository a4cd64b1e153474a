/**
 * The checks every routed request passes before its handler: no control character or lone
 * surrogate in any string of its query, path or JSON body (text.ts; a body schema's FreeText
 * fields may hold several lines). The proxy is left out: its query and body go to the provider as
 * sent.
 *
 * It also notes which requests reached their handler: a refusal raised before (the body's parse,
 * the schema, these checks) is answered only after the route's admission (src/admission.ts), so an
 * unauthenticated caller learns nothing about a protected route's shape.
 * errors: BAD_REQUEST.
 */
import { Elysia } from 'elysia'
import { parsedBody } from './body'
import { checkText, multilinePaths } from './text'
import type { RouteLike } from '../route-table'


const reached = new WeakSet<Request>()

/** Whether the request's handler ran (its own admission with it). */
export const reachedHandler = (request: Request): boolean => reached.has(request)

/**
 * The checks of a request bound for a route other than the proxy's, and the mark that it passed
 * them: the hook below, and app.ts's direct path for a paid call, which passes them as the hook would.
 */
export function passEdge(request: Request, params: Record<string, string | undefined> | undefined, multiline: ReadonlySet<string>): void {
  // Every value of the query string, under its parameter's name, not only the router's `query`:
  // it keeps the last of a repeated parameter, and a page reading `searchParams.get` (the
  // console) takes the first: `?agent=%00&agent=x` carried a NUL past this check to Postgres.
  const at = request.url.indexOf('?')
  if (at !== -1) for (const [k, v] of new URLSearchParams(request.url.slice(at + 1))) checkText({ [k]: v })
  checkText(params)
  // Read from the parser's copy, not `body`: naming `body` here would make Elysia parse every route's body.
  checkText(parsedBody(request), multiline)
  reached.add(request)
}

/** `use` it before the routes: Elysia applies a hook only to routes registered after it. */
export function edgeChecks(routes: () => RouteLike[]) {
  let multiline: Map<string, ReadonlySet<string>> | null = null
  const multilineOf = (method: string, route: string): ReadonlySet<string> => {
    multiline ??= new Map(routes().map((r) => [`${r.method} ${r.path}`, multilinePaths(r.hooks?.body)]))
    return multiline.get(`${method} ${route}`) ?? new Set()
  }
  return new Elysia({ name: 'edge-checks' }).onBeforeHandle({ as: 'global' }, ({ request, route, params }) => {
    if (route.startsWith('/proxy/')) reached.add(request)
    else passEdge(request, params, multilineOf(request.method, route))
  })
}
