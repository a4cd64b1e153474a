/**
 * Auth comes first. Elysia parses and validates a request before its handler runs, and the
 * handler is where a route admits its caller; so a request refused on the way (a body that is not
 * JSON, a field the schema refuses, a control character) would tell an unauthenticated caller about
 * a protected route's shape, and skip its rate limit. Such a refusal is answered only after the
 * admission the route's handler would have run: a missing or unknown bearer → UNAUTHORIZED (counted
 * per IP), a killed or revoked agent → its 403, past the limit → RATE_LIMITED.
 * Each route's access is its entry in the one route table (route-access.ts). Public routes keep their refusal, but it
 * is counted as their handler counts a request (per token with a valid bearer, else per IP): left
 * uncounted, any client could have the service read and parse MAX_BODY_BYTES of a malformed signup
 * without limit. The console's admission is its session cookie, not a bearer (docs/api.md §9): a
 * signed-in owner's refusal stands, anyone else's is UNAUTHORIZED (asked for a bearer, a signed-in
 * browser heard 401 for a bad query value); its sign-in form and stylesheet are public (the form's
 * post counted per IP, as its handler counts it). The proxy and /metrics (its own token, no body)
 * keep theirs. A paid request (a call, a proxied request) is admitted inside its debit; what its
 * handler refuses before the debit (an unknown slug, params, a metered body) goes through
 * `refusalAfterAdmission` (auth/refusal-after-admission.ts) instead.
 * errors: UNAUTHORIZED, FORBIDDEN (also an agent token on an operator-only surface), AGENT_KILLED,
 *         AGENT_REVOKED, RATE_LIMITED, NOT_CONFIGURED.
 */
import { cookieOf, readSession, SESSION_COOKIE } from './auth/console-session'
import { admitFounder } from './auth/founder'
import { ApiError } from './errors'
import { bearerOf, type Http, type MaybeServer } from './http'
import { accessOf, routesWith, type RouteAccess } from './route-access'
import type { Services } from './services'

/**
 * Operator-only surfaces (docs/api.md §2), read from the route table: an agent token there is
 * FORBIDDEN whatever its body, as the spec's "operator-only surfaces answer FORBIDDEN to others"
 * says. Admitted as a member, a malformed body answered BAD_REQUEST naming the field, a
 * well-formed one FORBIDDEN.
 */
export const OPERATOR_ONLY: ReadonlySet<string> = new Set([...routesWith('operator'), ...routesWith('operator-or-email')])

/**
 * The access the refusal before a handler applies: the route's entry; a path the router did not
 * match falls back as it always has (the proxy's and the console's by their prefix, else a member's).
 */
function admissionOf(method: string, route: string): RouteAccess {
  const access = accessOf(method, route)
  if (access) return access
  if (route.startsWith('/proxy/')) return 'own'
  if (route === '/console' || route.startsWith('/console/')) return 'console'
  if (route.startsWith('/admin/')) return 'founder'
  return 'member'
}

/** The admission's refusal, or null when the caller is admitted (the original refusal stands). */
export async function refusalBeforeRequest(s: Services, h: Http, route: string | undefined, request: Request, server: MaybeServer): Promise<ApiError | null> {
  if (!route) return null
  const access = admissionOf(request.method, route)
  if (access === 'uncounted' || access === 'own') return null
  const bearer = bearerOf(request.headers.get('authorization'))
  try {
    if (access === 'console-public') {
      if (request.method === 'POST') await h.anonymous(request, server)
    } else if (access === 'console') {
      if (!(await readSession(s.ctx, cookieOf(request, SESSION_COOKIE)))) throw new ApiError('UNAUTHORIZED')
    } else if (access === 'anonymous' || (access === 'operator-or-email' && bearer === undefined)) await h.anonymous(request, server, bearer)
    else if (access === 'founder') await admitFounder(s.cfg.ADMIN_TOKEN, s.guard, bearer, h.ip(request, server))
    else if (access === 'operator' || access === 'operator-or-email') await h.operator(bearer, request, server)
    else await h.member(bearer, request, server)
    return null
  } catch (e) {
    if (e instanceof ApiError) return e
    throw e
  }
}
