/**
 * A loopback stand-in for the few Stripe endpoints the gateway uses, spoken to by the official SDK
 * (STRIPE_API_BASE). Form-encoded requests in, Stripe-shaped JSON out, Stripe-shaped errors, and
 * idempotency keys honoured like Stripe does (same key → same answer, no second charge).
 *
 *   POST /v1/customers                       POST /v1/checkout/sessions    GET /v1/checkout/sessions/:id
 *   GET  /v1/setup_intents/:id (expand)      POST /v1/payment_intents      POST /v1/payment_methods/:id/detach
 *   POST /v1/refunds                         GET  /v1/payment_intents (customer, created[gte], newest first)
 *   GET  /v1/payment_intents/:id
 *
 * Cards behave like Stripe's test cards (by the number given to `completeSetup`):
 *   4242424242424242 succeeds · 4000000000000341 attaches, then every charge is declined
 *   4000002760003184 off-session charges need authentication (authentication_required)
 * Tests play the human at Checkout with `completeSetup` / `payCheckout`, and get back the signed
 * webhook delivery Stripe would send (`signedEvent`). `dashboardRefund` and `dispute` play the
 * merchant refunding in the dashboard and the card holder disputing: each returns the
 * `charge.refunded` / `charge.dispute.created` delivery (a charge carries no metadata of ours).
 */
import Stripe from 'stripe'

type Obj = Record<string, any>

export interface FakeStripe {
  url: string
  secretKey: string
  webhookSecret: string
  customers: Map<string, Obj>
  sessions: Map<string, Obj>
  setupIntents: Map<string, Obj>
  paymentMethods: Map<string, Obj & { number: string }>
  paymentIntents: Map<string, Obj>
  refunds: Obj[]
  requests: { method: string; path: string; body: Obj; idempotencyKey: string | null }[]
  /** Delay of every PaymentIntent creation (lets a test see overlapping charges). */
  chargeLatencyMs: number
  /** Answer PaymentIntent creations with status `processing` (outcome unknown until a webhook). */
  chargeProcessing: boolean
  /** Most PaymentIntent creations in flight at once, per customer. */
  maxConcurrentCharges: number
  /** The human completes a setup session with a card: returns the checkout.session.completed delivery. */
  completeSetup(sessionId: string, cardNumber: string): Promise<SignedEvent>
  /** The human pays a payment session: returns the checkout.session.completed delivery. */
  payCheckout(sessionId: string): Promise<SignedEvent>
  /** Refunds `cents` more of a PaymentIntent's charge (as in the dashboard): the charge.refunded delivery. */
  dashboardRefund(paymentIntentId: string, cents: number): Promise<SignedEvent>
  /** The card holder disputes `cents` (default the whole charge): the charge.dispute.created delivery. */
  dispute(paymentIntentId: string, cents?: number): Promise<SignedEvent>
  /** The charge of a PaymentIntent, as charge events carry it. */
  chargeOf(paymentIntentId: string): Obj
  /** Any event, signed with the webhook secret (or another secret, to forge one). */
  signedEvent(type: string, object: Obj, opts?: { secret?: string; id?: string }): Promise<SignedEvent>
  stop(): void
}

export interface SignedEvent {
  id: string
  payload: string
  signature: string
}

const BRANDS: Record<string, string> = { '4': 'visa', '5': 'mastercard', '3': 'amex' }

/** Parses Stripe's form encoding (`a[b][0][c]=v`) into nested objects; numeric keys stay keys. */
export function parseForm(text: string): Obj {
  const out: Obj = {}
  for (const [rawKey, value] of new URLSearchParams(text)) {
    const parts = rawKey.replace(/\]/g, '').split('[')
    let node = out
    parts.forEach((p, i) => {
      if (i === parts.length - 1) node[p] = value
      else node = node[p] ??= {}
    })
  }
  return out
}

let seq = 0
const nowS = () => Math.floor(Date.now() / 1000)
const id = (prefix: string) => `${prefix}_test_${Date.now().toString(36)}${(++seq).toString(36)}`

function stripeError(status: number, error: Obj): Response {
  return Response.json({ error }, { status })
}

export function startFakeStripe(opts: { secretKey?: string; webhookSecret?: string } = {}): FakeStripe {
  const idempotent = new Map<string, { status: number; body: Obj }>()
  const inFlight = new Map<string, number>()
  const fake: FakeStripe = {
    url: '',
    secretKey: opts.secretKey ?? 'sk_test_fake_0123456789',
    webhookSecret: opts.webhookSecret ?? 'whsec_test_fake_0123456789',
    customers: new Map(),
    sessions: new Map(),
    setupIntents: new Map(),
    paymentMethods: new Map(),
    paymentIntents: new Map(),
    refunds: [],
    requests: [],
    chargeLatencyMs: 0,
    chargeProcessing: false,
    maxConcurrentCharges: 0,
    completeSetup: async (sessionId, number) => {
      const s = fake.sessions.get(sessionId)
      if (!s || s.mode !== 'setup') throw new Error(`no setup session ${sessionId}`)
      const pm = { id: id('pm'), object: 'payment_method', type: 'card', customer: s.customer, number, card: { brand: BRANDS[number[0]!] ?? 'visa', last4: number.slice(-4) } }
      fake.paymentMethods.set(pm.id, pm)
      const si = { id: id('seti'), object: 'setup_intent', status: 'succeeded', customer: s.customer, payment_method: pm.id, metadata: s.setup_intent_data?.metadata ?? {} }
      fake.setupIntents.set(si.id, si)
      Object.assign(s, { status: 'complete', setup_intent: si.id })
      return fake.signedEvent('checkout.session.completed', s)
    },
    payCheckout: async (sessionId) => {
      const s = fake.sessions.get(sessionId)
      if (!s || s.mode !== 'payment') throw new Error(`no payment session ${sessionId}`)
      const pi = { id: id('pi'), object: 'payment_intent', created: nowS(), status: 'succeeded', amount: s.amount_total, currency: 'usd', metadata: s.payment_intent_data?.metadata ?? {} }
      fake.paymentIntents.set(pi.id, pi)
      Object.assign(s, { status: 'complete', payment_status: 'paid', payment_intent: pi.id })
      return fake.signedEvent('checkout.session.completed', s)
    },
    chargeOf: (piId) => {
      const pi = fake.paymentIntents.get(piId)
      if (!pi) throw new Error(`no payment intent ${piId}`)
      pi.latest_charge ??= id('ch')
      const refunds = fake.refunds.filter((r) => r.payment_intent === piId)
      const refunded = refunds.reduce((a, r) => a + Number(r.amount), 0)
      return { id: pi.latest_charge, object: 'charge', amount: pi.amount, amount_refunded: refunded, refunded: refunded >= pi.amount, currency: pi.currency, payment_intent: piId, customer: pi.customer ?? null, metadata: {}, status: 'succeeded' }
    },
    dashboardRefund: async (piId, cents) => {
      const pi = fake.paymentIntents.get(piId)
      if (!pi) throw new Error(`no payment intent ${piId}`)
      fake.refunds.push({ id: id('re'), object: 'refund', payment_intent: piId, amount: cents, status: 'succeeded' })
      return fake.signedEvent('charge.refunded', fake.chargeOf(piId))
    },
    dispute: async (piId, cents) => {
      const charge = fake.chargeOf(piId)
      const du = { id: id('du'), object: 'dispute', amount: cents ?? charge.amount, charge: charge.id, payment_intent: piId, currency: charge.currency, reason: 'fraudulent', status: 'needs_response', is_charge_refundable: false, metadata: {} }
      return fake.signedEvent('charge.dispute.created', du)
    },
    signedEvent: async (type, object, o = {}) => {
      const eventId = o.id ?? id('evt')
      const payload = JSON.stringify({
        id: eventId,
        object: 'event',
        api_version: '2026-10-28.endive',
        created: Math.floor(Date.now() / 1000),
        livemode: false,
        pending_webhooks: 1,
        request: { id: null, idempotency_key: null },
        type,
        data: { object: publicView(object) },
      })
      const signature = await Stripe.webhooks.generateTestHeaderStringAsync({ payload, secret: o.secret ?? fake.webhookSecret })
      return { id: eventId, payload, signature }
    },
    stop: () => server.stop(true),
  }

  /** A stored object as Stripe returns it (the fake's own `number` never leaves). */
  function publicView(o: Obj): Obj {
    const { number: _n, ...rest } = o
    return rest
  }

  async function route(method: string, path: string, body: Obj, query: Obj): Promise<Response> {
    const parts = path.split('/').filter(Boolean) // ['v1', resource, id?, action?]
    const [, resource, rid, action] = parts
    if (method === 'POST' && resource === 'customers' && !rid) {
      const c = { id: id('cus'), object: 'customer', email: body.email ?? null, metadata: body.metadata ?? {} }
      fake.customers.set(c.id, c)
      return Response.json(c)
    }
    if (resource === 'checkout' && rid === 'sessions') {
      const sid = action
      if (method === 'POST' && !sid) {
        const amount = body.line_items ? Number(body.line_items['0']?.price_data?.unit_amount ?? 0) * Number(body.line_items['0']?.quantity ?? 1) : null
        const s = {
          id: id('cs'),
          object: 'checkout.session',
          mode: body.mode,
          status: 'open',
          payment_status: body.mode === 'setup' ? 'no_payment_required' : 'unpaid',
          customer: body.customer ?? null,
          client_reference_id: body.client_reference_id ?? null,
          metadata: body.metadata ?? {},
          setup_intent_data: body.setup_intent_data,
          payment_intent_data: body.payment_intent_data,
          amount_total: amount,
          currency: body.currency ?? 'usd',
          success_url: body.success_url,
          cancel_url: body.cancel_url,
          setup_intent: null,
          payment_intent: null,
          url: '',
        }
        s.url = `https://checkout.stripe.test/c/pay/${s.id}`
        fake.sessions.set(s.id, s)
        return Response.json(publicSession(s))
      }
      if (method === 'GET' && sid) {
        const s = fake.sessions.get(sid)
        return s ? Response.json(publicSession(s)) : missing('checkout.session', sid)
      }
    }
    if (method === 'GET' && resource === 'setup_intents' && rid) {
      const si = fake.setupIntents.get(rid)
      if (!si) return missing('setup_intent', rid)
      const expand = Object.values(query.expand ?? {}) as string[]
      const out = { ...si }
      if (expand.includes('payment_method')) out.payment_method = publicView(fake.paymentMethods.get(si.payment_method)!)
      return Response.json(out)
    }
    if (method === 'POST' && resource === 'payment_methods' && rid && action === 'detach') {
      const pm = fake.paymentMethods.get(rid)
      if (!pm || !pm.customer) return missing('payment_method', rid)
      pm.customer = null
      return Response.json(publicView(pm))
    }
    if (method === 'POST' && resource === 'payment_intents' && !rid) return paymentIntent(body)
    if (method === 'GET' && resource === 'payment_intents' && !rid) return listPaymentIntents(query)
    if (method === 'GET' && resource === 'payment_intents' && rid) {
      const pi = fake.paymentIntents.get(rid)
      return pi ? Response.json(pi) : missing('payment_intent', rid)
    }
    if (method === 'POST' && resource === 'refunds' && !rid) {
      const pi = fake.paymentIntents.get(body.payment_intent)
      if (!pi) return missing('payment_intent', body.payment_intent)
      const r = { id: id('re'), object: 'refund', payment_intent: pi.id, amount: pi.amount, status: 'succeeded' }
      fake.refunds.push(r)
      return Response.json(r)
    }
    return stripeError(404, { type: 'invalid_request_error', message: `Unrecognized request URL (${method}: ${path})` })
  }

  function publicSession(s: Obj): Obj {
    const { setup_intent_data: _a, payment_intent_data: _b, ...rest } = s
    return rest
  }

  function missing(kind: string, rid: string): Response {
    return stripeError(404, { type: 'invalid_request_error', code: 'resource_missing', message: `No such ${kind}: '${rid}'` })
  }

  /** Stripe's list: newest first, `limit` a page, `starting_after` the last id of the previous page. */
  function listPaymentIntents(q: Obj): Response {
    const gte = q.created?.gte !== undefined ? Number(q.created.gte) : -Infinity
    const all = [...fake.paymentIntents.values()]
      .filter((pi) => (q.customer === undefined || pi.customer === q.customer) && pi.created >= gte)
      .reverse()
    const from = q.starting_after ? all.findIndex((pi) => pi.id === q.starting_after) + 1 : 0
    const limit = Math.min(Number(q.limit ?? 10), 100)
    const data = all.slice(from, from + limit)
    return Response.json({ object: 'list', url: '/v1/payment_intents', has_more: from + limit < all.length, data })
  }

  async function paymentIntent(body: Obj): Promise<Response> {
    const customer = String(body.customer ?? '')
    const n = (inFlight.get(customer) ?? 0) + 1
    inFlight.set(customer, n)
    fake.maxConcurrentCharges = Math.max(fake.maxConcurrentCharges, n)
    try {
      if (fake.chargeLatencyMs > 0) await Bun.sleep(fake.chargeLatencyMs)
      const pm = fake.paymentMethods.get(body.payment_method)
      if (!pm || pm.customer !== customer) return missing('payment_method', body.payment_method)
      const pi: Obj = {
        id: id('pi'),
        object: 'payment_intent',
        created: nowS(),
        amount: Number(body.amount),
        currency: body.currency,
        customer,
        payment_method: pm.id,
        metadata: body.metadata ?? {},
        status: 'succeeded',
        last_payment_error: null,
      }
      fake.paymentIntents.set(pi.id, pi)
      if (fake.chargeProcessing) {
        pi.status = 'processing'
        return Response.json(pi)
      }
      if (pm.number === '4000002760003184' && body.off_session === 'true') {
        pi.status = 'requires_payment_method'
        return stripeError(402, {
          type: 'card_error',
          code: 'authentication_required',
          decline_code: 'authentication_required',
          message: 'Your card was declined. This transaction requires authentication.',
          payment_intent: pi,
        })
      }
      if (pm.number === '4000000000000341') {
        pi.status = 'requires_payment_method'
        return stripeError(402, { type: 'card_error', code: 'card_declined', decline_code: 'generic_decline', message: 'Your card was declined.', payment_intent: pi })
      }
      return Response.json(pi)
    } finally {
      inFlight.set(customer, (inFlight.get(customer) ?? 1) - 1)
    }
  }

  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const url = new URL(req.url)
      if (req.headers.get('authorization') !== `Bearer ${fake.secretKey}`)
        return stripeError(401, { type: 'invalid_request_error', message: 'Invalid API Key provided' })
      const body = req.method === 'POST' ? parseForm(await req.text()) : {}
      const idem = req.headers.get('idempotency-key')
      fake.requests.push({ method: req.method, path: url.pathname, body, idempotencyKey: idem })
      // Stripe's idempotency: a key replays its first answer (the SDK also sends keys on its retries).
      const memoKey = idem && req.method === 'POST' ? `${url.pathname} ${idem}` : null
      const memo = memoKey ? idempotent.get(memoKey) : undefined
      if (memo) return Response.json(memo.body, { status: memo.status, headers: { 'idempotent-replayed': 'true' } })
      const res = await route(req.method, url.pathname, body, parseForm(url.search.slice(1)))
      if (memoKey) idempotent.set(memoKey, { status: res.status, body: (await res.clone().json()) as Obj })
      return res
    },
  })
  fake.url = `http://127.0.0.1:${server.port}`
  return fake
}
