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
  /** `member` for a route: admits the request, puts its rate headers on the answer. */
  memberIn(c: RouteContext): Promise<Principal>
  /** `operator` for a route: admits the request, puts its rate headers on the answer. */
  operatorIn(c: RouteContext): Promise<Principal>
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
  return {
    ip,
    requireLocal: (surface, request, server) => refuseRemoteClient(s.cfg, surface, client(request, server)),
    anonymous: (request, server, bearer) => s.guard.admitAny(bearer, ip(request, server)),
    member: (bearer, request, server) => s.guard.admit(bearer, ip(request, server)),
    operator: (bearer, request, server) => s.guard.admitOperator(bearer, ip(request, server)),
    memberIn: async (c) => withHeaders(c, await s.guard.admit(c.bearer, ip(c.request, c.server))),
    operatorIn: async (c) => withHeaders(c, await s.guard.admitOperator(c.bearer, ip(c.request, c.server))),
    json: jsonObjectParser(s.cfg.MAX_BODY_BYTES),
  }
}

function withHeaders(c: RouteContext, a: Admitted): Principal {
  Object.assign(c.set.headers, a.headers)
  return a.principal
}
