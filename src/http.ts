/**
 * Request-level helpers shared by the route modules: the bearer extractor (header only — tokens
 * in query strings end up in logs) and the admission calls with the client address.
 */
import { Elysia } from 'elysia'
import type { Server } from 'bun'
import type { Services } from './services'
import type { Admitted } from './auth/guard'
import type { Principal } from './auth/principal'
import { jsonObjectParser } from './edge/body'
import { canonicalIp, rateKeyOf } from './edge/client-ip'
import { refuseRemoteClient, type LocalSurface } from './edge/local-only'
import { accessOf } from './route-access'

// The auth scheme is case-insensitive (RFC 7235 §2.1): `bearer sk_…` is as good as `Bearer sk_…`.
const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i

/** The token of an `Authorization: Bearer <token>` header, any case of the scheme. */
export function bearerOf(authorization: string | null | undefined): string | undefined {
  return (authorization && BEARER.exec(authorization)?.[1]) || undefined
}

export const bearerAuth = new Elysia({ name: 'bearer-auth' }).derive({ as: 'global' }, ({ request }) => ({
  bearer: bearerOf(request.headers.get('authorization')),
}))

export type MaybeServer = Server<unknown> | null | undefined

/** The part of an Elysia route context that admission reads (and whose headers it sets). */
export interface RouteContext {
  /** The route as registered (`/v1/agents/:id`): with the method, its key in the route table. */
  route: string
  bearer: string | undefined
  request: Request
  server: MaybeServer
  set: { headers: Record<string, string | number> }
}

export interface Http {
  /** The client for the per-IP limit: an IPv4 address or an IPv6 /64 (edge/client-ip.ts). */
  ip(request: Request, server: MaybeServer): string
  /** Refuses (FORBIDDEN) a client not on this machine while `surface` is local-only (edge/local-only.ts). */
  requireLocal(surface: LocalSurface, request: Request, server: MaybeServer): void
  /** No bearer needed: counted per token if one comes along, else per IP. Returns rate headers. */
  anonymous(request: Request, server: MaybeServer, bearer?: string): Promise<Record<string, string>>
  /** Owner or agent token. */
  member(bearer: string | undefined, request: Request, server: MaybeServer): Promise<Admitted>
  /** Owner token only (agent → FORBIDDEN). */
  operator(bearer: string | undefined, request: Request, server: MaybeServer): Promise<Admitted>
  /**
   * A route's own admission, as its entry in the route table (route-access.ts) says: `member` or
   * `operator`, so a handler cannot admit differently from its entry. Returns the principal and
   * its rate headers.
   */
  admitted(c: RouteContext): Promise<Admitted>
  /** `admitted`, its rate headers put on the answer. */
  admitIn(c: RouteContext): Promise<Principal>
  /** Parse hook (`parse: h.json`) of a route whose body is a JSON object (edge/body.ts). */
  json: ReturnType<typeof jsonObjectParser>
}

export function http(s: Services): Http {
  // The socket's address in one spelling first (an IPv4 proxy on a dual-stack socket arrives as
  // `::ffff:…` and would match no TRUSTED_PROXIES entry), then the client counted as edge/client-ip.ts says.
  const client = (request: Request, server: MaybeServer) => {
    const socket = server?.requestIP(request)?.address
    return s.guard.clientIp(request, socket === undefined ? undefined : canonicalIp(socket))
  }
  const ip = (request: Request, server: MaybeServer) => rateKeyOf(client(request, server))
  const admitted = (c: RouteContext): Promise<Admitted> => {
    const access = handlerAccess(c)
    return access === 'operator' ? s.guard.admitOperator(c.bearer, ip(c.request, c.server)) : s.guard.admit(c.bearer, ip(c.request, c.server))
  }
  return {
    ip,
    requireLocal: (surface, request, server) => refuseRemoteClient(s.cfg, surface, client(request, server)),
    anonymous: (request, server, bearer) => s.guard.admitAny(bearer, ip(request, server)),
    member: (bearer, request, server) => s.guard.admit(bearer, ip(request, server)),
    operator: (bearer, request, server) => s.guard.admitOperator(bearer, ip(request, server)),
    admitted,
    admitIn: async (c) => withHeaders(c, await admitted(c)),
    json: jsonObjectParser(s.cfg.MAX_BODY_BYTES),
  }
}

/** The route's entry (a HEAD request is served by its GET route); a handler of any other access admits itself. */
function handlerAccess(c: RouteContext): 'member' | 'operator' {
  const method = c.request.method === 'HEAD' ? 'GET' : c.request.method
  const access = accessOf(method, c.route)
  if (access === 'member' || access === 'operator') return access
  // Its handler answers the no-bearer (lost-token) request itself, before it admits the owner.
  if (access === 'operator-or-email') return 'operator'
  throw new Error(`${method} ${c.route} is ${access ?? 'not in the route table'}: its handler cannot admit by a bearer`)
}

function withHeaders(c: RouteContext, a: Admitted): Principal {
  Object.assign(c.set.headers, a.headers)
  return a.principal
}
