/**
 * Request-level helpers shared by the route modules: the bearer extractor (header only — tokens
 * in query strings end up in logs) and the admission calls with the client address.
 */
import { bearer } from '@elysiajs/bearer'
import type { Server } from 'bun'
import type { Services } from './services'
import type { Admitted } from './auth/guard'

export const bearerAuth = bearer({ extract: { header: 'Bearer', query: '', body: '' } })

type MaybeServer = Server<unknown> | null | undefined

export interface Http {
  ip(request: Request, server: MaybeServer): string
  /** No bearer needed: counted per token if one comes along, else per IP. Returns rate headers. */
  anonymous(request: Request, server: MaybeServer, bearer?: string): Promise<Record<string, string>>
  /** Owner or agent token. */
  member(bearer: string | undefined, request: Request, server: MaybeServer): Promise<Admitted>
  /** Owner token only (agent → FORBIDDEN). */
  operator(bearer: string | undefined, request: Request, server: MaybeServer): Promise<Admitted>
}

export function http(s: Services): Http {
  const ip = (request: Request, server: MaybeServer) => s.guard.clientIp(request, server?.requestIP(request)?.address)
  return {
    ip,
    anonymous: (request, server, bearer) => s.guard.admitAny(bearer, ip(request, server)),
    member: (bearer, request, server) => s.guard.admit(bearer, ip(request, server)),
    operator: (bearer, request, server) => s.guard.admitOperator(bearer, ip(request, server)),
  }
}
