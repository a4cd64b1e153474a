/**
 * Who may reach /mcp from a browser (docs/api.md §10; the MCP transport spec's MUST): an `Origin`
 * that is present must be the service's own or one listed in MCP_ALLOWED_ORIGINS, else a page on
 * any site could drive an agent's tools with the cookie-less bearer it was handed. With a loopback
 * BASE_URL the `Host` must be a loopback name too: a DNS-rebound name carries the attacker's Host.
 * errors: FORBIDDEN (403), checked before the bearer, so nothing runs and nothing is counted.
 */
import { allowedOrigins, isLoopback, type Config } from '../config'
import { ApiError } from '../errors'

export interface OriginPolicy {
  /** Origins served (serialized as `URL.origin`: lower-case host, no default port). */
  origins: ReadonlySet<string>
  /** Whether the Host header must name this machine (a loopback BASE_URL). */
  loopbackHostOnly: boolean
  /** BASE_URL's port (its scheme's default when unnamed). */
  port: string
}

// The names the conformance suite's dns-rebinding scenario accepts, on any port.
const LOOPBACK_HOST = /^(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?$/i

export function originPolicy(cfg: Pick<Config, 'BASE_URL' | 'MCP_ALLOWED_ORIGINS'>): OriginPolicy {
  const origins = new Set([new URL(cfg.BASE_URL).origin, ...allowedOrigins(cfg.MCP_ALLOWED_ORIGINS)])
  const base = new URL(cfg.BASE_URL)
  return { origins, loopbackHostOnly: isLoopback(cfg.BASE_URL), port: base.port || (base.protocol === 'https:' ? '443' : '80') }
}

/** Throws FORBIDDEN when the request comes from a page or a host name this service does not serve. */
export function refuseForeignOrigin(request: Request, policy: OriginPolicy): void {
  const origin = request.headers.get('origin')
  // "null" (a sandboxed page, a file://) parses to no origin and is refused like any foreign one.
  if (origin !== null && !policy.origins.has(originOf(origin) ?? '') && !(policy.loopbackHostOnly && sameLocalOrigin(origin, policy.port)))
    throw new ApiError('FORBIDDEN', { role: `pages of this service's own origin or of MCP_ALLOWED_ORIGINS (Origin ${JSON.stringify(origin)} is neither)` })
  if (policy.loopbackHostOnly && !LOOPBACK_HOST.test(hostOf(request)))
    throw new ApiError('FORBIDDEN', { role: 'clients on this machine: the service runs on a loopback BASE_URL and the Host header names another host' })
}

/**
 * On a loopback BASE_URL, the service's own page under another loopback name (`localhost` for
 * `127.0.0.1`, the same port) is its own: a rebound name never serializes as a loopback origin.
 * The conformance suite's dns-rebinding scenario sends `localhost` whatever the server's spelling.
 */
function sameLocalOrigin(text: string, port: string): boolean {
  const origin = originOf(text)
  if (origin === null) return false
  const url = new URL(origin)
  return LOOPBACK_HOST.test(url.host) && (url.port || (url.protocol === 'https:' ? '443' : '80')) === port
}

function originOf(text: string): string | null {
  try {
    const url = new URL(text)
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : null
  } catch {
    return null
  }
}

// A request built in-process (app.handle) has no Host header; its URL carries the host instead.
function hostOf(request: Request): string {
  return request.headers.get('host') ?? new URL(request.url).host
}
