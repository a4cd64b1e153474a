/**
 * A loopback stand-in for third-party providers. It records every request it receives (method,
 * path, headers, body) and answers by path:
 *   /ok, /echo      200 JSON echo of the body
 *   /status/<n>     that status with a small JSON body
 *   /slow/<ms>      answers after <ms>
 *   /hang           never answers (the caller's timeout must fire)
 *   /big/<bytes>    a body of that size (with Content-Length)
 *   /chunked/<bytes> a body of that size, chunked (no Content-Length)
 *   /reset          starts a body, then breaks the connection
 * Tests may replace `handler` to script anything else.
 */
export interface Seen {
  method: string
  path: string
  headers: Record<string, string>
  body: string
}

export interface FakeUpstream {
  url: string
  port: number
  seen: Seen[]
  handler: ((req: Request, seen: Seen) => Response | Promise<Response>) | null
  stop(): void
}

export function startFakeUpstream(): FakeUpstream {
  const fake: FakeUpstream = {
    url: '',
    port: 0,
    seen: [],
    handler: null,
    stop: () => server.stop(true),
  }
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    idleTimeout: 0,
    async fetch(req, srv) {
      const url = new URL(req.url)
      const seen: Seen = { method: req.method, path: url.pathname + url.search, headers: req.headers.toJSON(), body: await req.text() }
      fake.seen.push(seen)
      if (fake.handler) return fake.handler(req, seen)
      return defaultAnswer(url.pathname, seen, req, srv)
    },
  })
  fake.port = server.port!
  fake.url = `http://127.0.0.1:${server.port}`
  return fake
}

async function defaultAnswer(path: string, seen: Seen, req: Request, srv: { timeout?: unknown }): Promise<Response> {
  const [, head, arg] = path.split('/')
  switch (head) {
    case 'ok':
    case 'echo':
      return Response.json({ echo: seen.body ? JSON.parse(seen.body) : null, method: seen.method })
    case 'status':
      return Response.json({ error: `status ${arg}` }, { status: Number(arg) })
    case 'slow':
      await Bun.sleep(Number(arg))
      return Response.json({ slow: Number(arg) })
    case 'hang':
      await new Promise<never>(() => {})
      return new Response()
    case 'big':
      return new Response('x'.repeat(Number(arg)), { headers: { 'content-type': 'text/plain' } })
    case 'chunked': {
      const total = Number(arg)
      const chunk = 'y'.repeat(16 * 1024)
      let sent = 0
      return new Response(
        new ReadableStream({
          pull(c) {
            if (sent >= total) return c.close()
            const n = Math.min(chunk.length, total - sent)
            sent += n
            c.enqueue(new TextEncoder().encode(chunk.slice(0, n)))
          },
        }),
        { headers: { 'content-type': 'text/plain' } },
      )
    }
    case 'reset':
      // Headers, a first chunk, then the connection breaks mid-body.
      return new Response(
        new ReadableStream({
          start(c) {
            c.enqueue(new TextEncoder().encode('{"partial":'))
            setTimeout(() => c.error(new Error('reset')), 5)
          },
        }),
        { headers: { 'content-type': 'application/json' } },
      )
    default:
      return Response.json({ error: 'no such fake route', path }, { status: 404 })
  }
}
