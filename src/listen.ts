/**
 * Serves the app over node:http (Bun's implementation) instead of Bun.serve. Bun.serve hands a
 * handler a URL whose `..`, `%2e%2e` and `\` segments are already resolved —
 * `/proxy/openai/%2e%2e/admin` arrives as `/proxy/admin` — and exposes no raw request target;
 * node:http's `req.url` is the target exactly as sent, which the proxy's path safety needs
 * (CONTRACT §6). Each request becomes a web Request for app.handle, with:
 *   - the raw target recorded for the proxy (proxy/raw-target.ts);
 *   - the client address behind `server.requestIP(request)`, as Bun.serve would give it;
 *   - a signal that aborts when the client disconnects (the proxy aborts its upstream on it);
 *   - the body streamed, not buffered, and cut at the body limit (→ 413 BAD_REQUEST).
 * Response bodies are written chunk by chunk as they are produced (SSE leaves at once); a body
 * that errors mid-way (the proxy's response cap) destroys the socket, so the client sees the cut.
 */
import { once } from 'node:events'
import http, { type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Server } from 'bun'
import type { App } from './app'
import { ApiError } from './errors'
import { rememberRawTarget } from './proxy/raw-target'

export interface ListenOptions {
  port: number
  hostname?: string
  /** Request bodies past this many bytes are refused with 413. */
  maxBodyBytes: number
}

export interface Listener {
  port: number
  url: string
  stop(closeActiveConnections?: boolean): Promise<void>
}

/**
 * Every Request gets the same origin, whatever Host the client sent: nothing routes by host, links
 * come from BASE_URL, and Elysia's path parsing assumes a hostname of a certain length.
 */
const ORIGIN = 'http://localhost'

export async function listen(app: App, opt: ListenOptions): Promise<Listener> {
  const ips = new WeakMap<Request, { address: string; family: string; port: number }>()
  const server = http.createServer((req, res) => void serve(app, req, res, opt.maxBodyBytes, ips))
  server.listen(opt.port, opt.hostname)
  await once(server, 'listening')
  const port = (server.address() as AddressInfo).port
  const stop = async (closeActive = false) => {
    if (closeActive) server.closeAllConnections()
    else server.closeIdleConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
  // Elysia hands `app.server` to handlers as `server`; the routes only ask it for the client address.
  const shim = { port, hostname: opt.hostname ?? 'localhost', requestIP: (r: Request) => ips.get(r) ?? null, stop }
  app.server = shim as unknown as Server<unknown>
  return { port, url: `http://${opt.hostname ?? '127.0.0.1'}:${port}`, stop }
}

async function serve(
  app: App,
  req: IncomingMessage,
  res: ServerResponse,
  maxBodyBytes: number,
  ips: WeakMap<Request, { address: string; family: string; port: number }>,
): Promise<void> {
  const raw = req.url ?? '/'
  const gone = new AbortController()
  res.once('close', () => {
    if (!res.writableFinished) gone.abort()
  })
  let bodyTooLarge = false
  let request: Request
  try {
    const headers = new Headers()
    for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!)
    const hasBody = req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0'
    request = new Request(ORIGIN + originForm(raw), {
      method: req.method,
      headers,
      body: hasBody ? bodyStream(req, maxBodyBytes, () => (bodyTooLarge = true)) : undefined,
      duplex: 'half',
      signal: gone.signal,
    } as RequestInit)
  } catch {
    return send(res, new ApiError('BAD_REQUEST', { field: 'request target', expected: 'a valid HTTP request target' }).toResponse(), req.method)
  }
  rememberRawTarget(request, raw)
  ips.set(request, { address: req.socket.remoteAddress ?? '127.0.0.1', family: req.socket.remoteFamily ?? 'IPv4', port: req.socket.remotePort ?? 0 })
  let response: Response
  try {
    response = await app.handle(request)
  } catch {
    response = new ApiError('INTERNAL', { request_id: 'listener' }).toResponse()
  }
  if (bodyTooLarge && !res.headersSent) {
    void response.body?.cancel().catch(() => {})
    response = new ApiError('BAD_REQUEST', { field: 'body', expected: `at most ${maxBodyBytes} bytes` }).toResponse(413)
  }
  return send(res, response, req.method)
}

/** Path and query of the target; an absolute-form target (`http://host/p`) is routed by its path. */
function originForm(raw: string): string {
  if (raw.startsWith('/')) return raw
  try {
    const u = new URL(raw)
    return u.pathname + u.search
  } catch {
    return '/'
  }
}

function bodyStream(req: IncomingMessage, max: number, onTooLarge: () => void): ReadableStream<Uint8Array> {
  let size = 0
  let open = true
  return new ReadableStream<Uint8Array>(
    {
      start(c) {
        req.on('data', (chunk: Buffer) => {
          if (!open) return
          size += chunk.byteLength
          if (size > max) {
            open = false
            onTooLarge()
            c.error(new ApiError('BAD_REQUEST', { field: 'body', expected: `at most ${max} bytes` }))
            return
          }
          c.enqueue(chunk)
          if ((c.desiredSize ?? 1) <= 0) req.pause()
        })
        req.on('end', () => {
          if (open) c.close()
          open = false
        })
        req.on('error', (e) => {
          if (open) c.error(e)
          open = false
        })
      },
      pull() {
        req.resume()
      },
      cancel() {
        open = false
        // Read and discard the rest so the connection stays usable.
        req.resume()
      },
    },
    { highWaterMark: 4 },
  )
}

async function send(res: ServerResponse, response: Response, method: string | undefined): Promise<void> {
  const head: string[] = []
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') head.push(name, value)
  })
  for (const cookie of response.headers.getSetCookie()) head.push('set-cookie', cookie)
  const body = response.body
  if (!body || method === 'HEAD' || response.status === 204 || response.status === 304) {
    void body?.cancel().catch(() => {})
    res.writeHead(response.status, head)
    res.end()
    return
  }
  const reader = body.getReader()
  // The head goes out with the first chunk: until a byte exists, a failing body can still be
  // answered with an error status instead of a 200 that ends early.
  let first: Awaited<ReturnType<typeof reader.read>>
  try {
    first = await reader.read()
  } catch {
    if (res.destroyed) return
    return send(res, new ApiError('INTERNAL', { request_id: 'listener' }).toResponse(), method)
  }
  res.writeHead(response.status, head)
  if (first.done) {
    res.end()
    return
  }
  try {
    let chunk: Uint8Array = first.value
    for (;;) {
      if (res.destroyed) {
        await reader.cancel()
        return
      }
      if (!res.write(chunk)) await drained(res)
      const next = await reader.read()
      if (next.done) break
      chunk = next.value
    }
    res.end()
  } catch {
    // The body failed after the status line left: end without the final chunk, so no client
    // mistakes a cut-off body for a complete one.
    res.destroy()
  }
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done)
      res.off('close', done)
      resolve()
    }
    res.on('drain', done)
    res.on('close', done)
  })
}
