/**
 * Listens with Bun.serve, so that the proxy can check the raw request target (docs/api.md §6).
 * Bun builds `request.url` with a URL parser that resolves `..`, `%2e%2e` and `\` segments
 * (`/proxy/openai/%2e%2e/admin` arrives as `/proxy/admin`) and exposes no raw target; but its
 * router matches `routes` on the raw target. So the listener registers `/proxy/:p0/…/:pN` for
 * every depth up to MAX_SEGMENTS and records the matched segments for the proxy's path safety
 * (proxy/raw-target.ts); every request, matched or not, is then answered by the same app.handle.
 *
 * This leans on the router matching raw targets, which Bun 1.4 does; the raw-socket tests in
 * test/http/proxy.path.security.test.ts fail if a Bun upgrade changes that.
 */
import type { Server } from 'bun'
import type { App } from './app'
import { rememberRawPath } from './proxy/raw-target'

export interface ListenOptions {
  port: number
  /** One address to bind (the tests' loopback listener). */
  hostname?: string
  /**
   * The addresses to bind, all on one port (the first may pick it: port 0); absent: every
   * interface. Past the first, an address this host lacks (`::1` without IPv6) is skipped.
   */
  hostnames?: string[]
  /** Request bodies past this size are refused by the app (edge/body.ts), not by Bun. */
  maxBodyBytes: number
}

export interface Listener {
  port: number
  url: string
  /** `host:port` of each bound socket (`*:port`: every interface). */
  addresses: string[]
  stop(closeActiveConnections?: boolean): Promise<void>
}

/** Deeper proxy paths than this are refused as unverifiable (the deepest OpenAI/Anthropic paths have 7). */
export const MAX_SEGMENTS = 24
/** Seconds a connection may stay silent, outside the proxy. */
const IDLE_TIMEOUT_S = 30

type BunRequest = Request & { params: Record<string, string> }

export async function listen(app: App, opt: ListenOptions): Promise<Listener> {
  const routes: Record<string, (req: BunRequest, server: Server<unknown>) => Promise<Response>> = {}
  const viaProxyRoute = (trailingSlash: boolean) => (req: BunRequest, server: Server<unknown>) => {
    const segments: string[] = []
    for (let i = 0; req.params[`p${i}`] !== undefined; i++) segments.push(req.params[`p${i}`]!)
    rememberRawPath(req, `/proxy/${segments.join('/')}${trailingSlash ? '/' : ''}`)
    // An LLM may think for minutes before its next streamed token: the proxy sets no idle limit.
    server.timeout(req, 0)
    return app.handle(req)
  }
  let pattern = '/proxy/:p0'
  for (let i = 1; i <= MAX_SEGMENTS; i++) {
    routes[pattern] = viaProxyRoute(false)
    routes[`${pattern}/`] = viaProxyRoute(true)
    pattern += `/:p${i}`
  }
  const serve = (hostname: string | undefined, port: number) =>
    Bun.serve({
      port,
      hostname,
      development: false,
      idleTimeout: IDLE_TIMEOUT_S,
      // Bun's own refusal is an empty 413 that no client can read; the app refuses at exactly
      // maxBodyBytes with the JSON error, a declared length on arrival and a chunked body as it reads
      // it (edge/body.ts). Bun's limit is only a backstop so far above that it never speaks first.
      maxRequestBodySize: Number.MAX_SAFE_INTEGER,
      routes,
      fetch(req) {
        rememberRawPath(req, null)
        return app.handle(req)
      },
    })
  const [first, ...rest] = opt.hostnames ?? (opt.hostname ? [opt.hostname] : [undefined])
  const server = serve(first, opt.port)
  const port = server.port!
  const servers = [server]
  const addresses = [`${hostPart(first ?? '*')}:${port}`]
  for (const hostname of rest) {
    try {
      servers.push(serve(hostname, port))
      addresses.push(`${hostPart(hostname!)}:${port}`)
    } catch {
      // This host has no such address (IPv6 off): the others still serve.
    }
  }
  // Elysia hands `app.server` to handlers as `server` (the client address for the per-IP limit);
  // Bun's requestIP reads the request's own socket, whichever of the servers accepted it.
  app.server = server as unknown as typeof app.server
  return {
    port,
    url: `http://${hostPart(first ?? '127.0.0.1')}:${port}`,
    addresses,
    stop: async (closeActive = false) => {
      await Promise.all(servers.map((s) => s.stop(closeActive)))
    },
  }
}

/** An IPv6 address in brackets, as a URL or `host:port` writes it. */
function hostPart(host: string): string {
  return host.includes(':') ? `[${host}]` : host
}
