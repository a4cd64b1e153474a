/**
 * A loopback webhook receiver that checks every delivery the way a careful integrator would: the
 * Standard Webhooks signature, verified with the same `standardwebhooks` library, and dedupe on
 * `webhook-id`. While `down` it answers 503 (the sender must retry); `stop()`/`restart()` take the
 * port away entirely and give it back.
 */
import { Webhook } from 'standardwebhooks'

export interface Received {
  id: string
  type: string
  data: Record<string, unknown>
  headers: Record<string, string>
  body: string
  /** The signature checked out with the secret set at the time. */
  verified: boolean
  /** Answered 2xx (verified, and the receiver was up). */
  accepted: boolean
}

export interface Receiver {
  url: string
  secret: string | null
  down: boolean
  /** Every request, verified or not, in arrival order (retries included). */
  requests: Received[]
  /** Accepted deliveries, one per webhook-id (what a deduping receiver keeps). */
  unique(): Received[]
  ofType(type: string): Received[]
  stop(): void
  restart(): void
}

export function startReceiver(): Receiver {
  let server: ReturnType<typeof Bun.serve>
  let port = 0
  const serve = () =>
    Bun.serve({
      port,
      hostname: '127.0.0.1',
      async fetch(req) {
        const body = await req.text()
        const headers = req.headers.toJSON()
        let verified = false
        let parsed: { type?: string; data?: Record<string, unknown> } = {}
        try {
          parsed = JSON.parse(body)
        } catch {}
        if (r.secret)
          try {
            new Webhook(r.secret).verify(body, headers)
            verified = true
          } catch {}
        const accepted = verified && !r.down
        r.requests.push({ id: headers['webhook-id'] ?? '', type: parsed.type ?? '', data: parsed.data ?? {}, headers, body, verified, accepted })
        if (r.down) return new Response('down for maintenance', { status: 503 })
        return accepted ? new Response(null, { status: 204 }) : new Response('bad signature', { status: 400 })
      },
    })
  const r: Receiver = {
    url: '',
    secret: null,
    down: false,
    requests: [],
    unique() {
      const seen = new Map<string, Received>()
      for (const x of r.requests) if (x.accepted && !seen.has(x.id)) seen.set(x.id, x)
      return [...seen.values()]
    },
    ofType: (type) => r.unique().filter((x) => x.type === type),
    stop: () => server.stop(true),
    restart() {
      server = serve()
    },
  }
  server = serve()
  port = server.port!
  r.url = `http://127.0.0.1:${port}/hooks`
  return r
}
