/**
 * An HTTP relay between the app's Stripe SDK and the fake (test/fakes/stripe.ts) that lets a test
 * act after Stripe made a PaymentIntent and before the app reads the answer — the moment a webhook
 * of that very charge can overtake the synchronous answer.
 */
export interface StripeInterpose {
  url: string
  /** Where requests go (the fake's url); set once the fake is up. */
  target: string
  /** Awaited after a PaymentIntent creation answered, before its answer is relayed to the app. */
  afterCharge: ((pi: Record<string, any>) => Promise<void>) | null
  /** When true, a refund reaches Stripe (and is made) but its answer is lost: the app reads a 500. */
  loseRefundAnswers: boolean
  stop(): void
}

export function startStripeInterpose(): StripeInterpose {
  const relay: StripeInterpose = {
    url: '',
    target: '',
    afterCharge: null,
    loseRefundAnswers: false,
    stop: () => server.stop(true),
  }
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const u = new URL(req.url)
      const headers = new Headers(req.headers)
      headers.delete('host')
      const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : await req.arrayBuffer()
      const res = await fetch(relay.target + u.pathname + u.search, { method: req.method, headers, body })
      const text = await res.text()
      if (req.method === 'POST' && u.pathname === '/v1/payment_intents' && res.ok && relay.afterCharge) await relay.afterCharge(JSON.parse(text))
      if (req.method === 'POST' && u.pathname === '/v1/refunds' && relay.loseRefundAnswers)
        return Response.json({ error: { type: 'api_error', message: 'An unknown error occurred' } }, { status: 500 })
      const out = new Headers(res.headers)
      out.delete('content-length')
      out.delete('content-encoding')
      return new Response(text, { status: res.status, headers: out })
    },
  })
  relay.url = `http://127.0.0.1:${server.port}`
  return relay
}
