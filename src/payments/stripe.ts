/**
 * The Stripe gateway, on the official SDK. Consent is a Checkout Session in setup mode (Stripe
 * collects the card and any 3-D Secure step on its own page); refills are off-session
 * PaymentIntents with the attempt id as the idempotency key; credit packs are Checkout Sessions in
 * payment mode; webhooks are verified with the endpoint's signing secret.
 * `STRIPE_API_BASE` points the SDK at another host (the tests' loopback fake).
 * errors: none thrown for declines — they are outcomes; a setup session Stripe does not know is an
 *         outcome of completeConsent (invalid); SDK failures other than card, connection and API
 *         errors propagate.
 */
import Stripe from 'stripe'
import { CURRENCY } from './amounts'
import { hktMonthStart } from '../clock'
import { isAccountId } from '../redis/keys'
import {
  RefundRefusedError,
  WebhookSignatureError,
  type ChargeLookup,
  type ChargeOutcome,
  type ChargeQuery,
  type ChargeRequest,
  type CheckoutRequest,
  type CheckoutResult,
  type ConsentCompletion,
  type ConsentLookup,
  type ConsentRequest,
  type ConsentResult,
  type GatewayEvent,
  type PaymentGateway,
  type SavedCard,
} from './gateway'

export interface StripeOptions {
  secretKey: string
  webhookSecret: string
  /** e.g. http://127.0.0.1:4242 — unset → api.stripe.com */
  apiBase?: string
  /** Our own absolute base, for Checkout's return URLs. */
  baseUrl: string
}

const MONTH_RE = /^\d{4}-\d{2}$/
/** A Checkout Session id as Stripe writes them; anything else is never sent to Stripe. */
const SESSION_ID_RE = /^cs_[A-Za-z0-9_]{1,196}$/

function sdkConfig(apiBase: string | undefined): Stripe.StripeConfig {
  // The SDK retries with the same idempotency key, so a retry never charges twice; the timeout
  // bounds how long a refill holds the account's refill lock.
  const cfg: Stripe.StripeConfig = { maxNetworkRetries: 2, timeout: 20_000, telemetry: false }
  if (apiBase) {
    const u = new URL(apiBase)
    cfg.protocol = u.protocol === 'http:' ? 'http' : 'https'
    cfg.host = u.hostname
    cfg.port = u.port || (u.protocol === 'http:' ? 80 : 443)
  }
  return cfg
}

/** A PaymentIntent's state as a charge outcome: the synchronous answer and a later look-up read it alike. */
function outcomeOf(pi: Stripe.PaymentIntent): ChargeOutcome {
  if (pi.status === 'succeeded') return { kind: 'paid', chargeId: pi.id }
  if (pi.status === 'requires_action') return { kind: 'authentication_required', message: 'the bank asks the card holder to authenticate' }
  if (pi.status === 'processing') return { kind: 'unknown', message: 'payment processing' }
  return { kind: 'declined', code: pi.last_payment_error?.decline_code ?? pi.last_payment_error?.code ?? pi.status, message: pi.last_payment_error?.message ?? 'declined' }
}

const idOf = (v: string | { id: string } | null | undefined): string | null => (v == null ? null : typeof v === 'string' ? v : v.id)

export class StripeGateway implements PaymentGateway {
  readonly mode = 'stripe' as const
  private stripe: Stripe

  constructor(private o: StripeOptions) {
    this.stripe = new Stripe(o.secretKey, sdkConfig(o.apiBase))
  }

  private async customer(accountId: string, email: string, existing: string | null): Promise<string> {
    if (existing) return existing
    // Keyed by account: a double-clicked consent page still makes one customer.
    const c = await this.stripe.customers.create({ email, metadata: { acct: accountId } }, { idempotencyKey: `customer-${accountId}` })
    return c.id
  }

  async startConsent(req: ConsentRequest): Promise<ConsentResult> {
    const customerId = await this.customer(req.accountId, req.email, req.customerId)
    const ref = encodeURIComponent(req.ref)
    const session = await this.stripe.checkout.sessions.create({
      mode: 'setup',
      customer: customerId,
      currency: CURRENCY,
      allowed_payment_method_types: ['card'],
      success_url: `${this.o.baseUrl}/mandate/done?ref=${ref}&session_id={CHECKOUT_SESSION_ID}`,
      cancel_url: `${this.o.baseUrl}/mandate?ref=${ref}`,
      metadata: {
        purpose: 'mandate',
        acct: req.accountId,
        threshold: String(req.limits.threshold),
        refill: String(req.limits.refill),
        ceiling: String(req.limits.ceiling),
      },
      setup_intent_data: { metadata: { acct: req.accountId } },
    })
    if (!session.url) throw new Error('stripe: setup session without url')
    return { kind: 'redirect', url: session.url, customerId, sessionId: session.id }
  }

  async completeConsent(sessionId: string): Promise<ConsentLookup> {
    if (!SESSION_ID_RE.test(sessionId)) return { kind: 'invalid' }
    let session: Stripe.Checkout.Session
    try {
      session = await this.stripe.checkout.sessions.retrieve(sessionId)
    } catch (e) {
      // "No such checkout.session" (a typo, a session of another Stripe account): the caller's mistake.
      if (e instanceof Stripe.errors.StripeInvalidRequestError && (e.code === 'resource_missing' || e.statusCode === 404)) return { kind: 'invalid' }
      throw e
    }
    if (session.mode !== 'setup' || session.metadata?.purpose !== 'mandate' || session.status === 'expired') return { kind: 'invalid' }
    const completion = await this.completion(session)
    return completion ? { kind: 'complete', completion } : { kind: 'pending' }
  }

  private async completion(session: Stripe.Checkout.Session): Promise<ConsentCompletion | null> {
    const m = session.metadata ?? {}
    if (session.mode !== 'setup' || session.status !== 'complete' || m.purpose !== 'mandate' || !isAccountId(m.acct ?? '')) return null
    const setupIntentId = idOf(session.setup_intent)
    const customerId = idOf(session.customer)
    if (!setupIntentId || !customerId) return null
    const si = await this.stripe.setupIntents.retrieve(setupIntentId, { expand: ['payment_method'] })
    const pm = si.payment_method
    if (si.status !== 'succeeded' || !pm || typeof pm === 'string' || !pm.card) return null
    const limits = { threshold: Number(m.threshold), refill: Number(m.refill), ceiling: Number(m.ceiling) }
    if (!Object.values(limits).every((v) => Number.isSafeInteger(v) && v >= 0)) return null
    return {
      accountId: m.acct!,
      consentId: session.id,
      card: { brand: pm.card.brand, last4: pm.card.last4, customerId, paymentMethodId: pm.id },
      limits,
    }
  }

  async charge(req: ChargeRequest): Promise<ChargeOutcome> {
    try {
      const pi = await this.stripe.paymentIntents.create(
        {
          amount: req.cents,
          currency: CURRENCY,
          customer: req.card.customerId,
          payment_method: req.card.paymentMethodId,
          off_session: true,
          confirm: true,
          description: `${req.credits} credits (${req.purpose === 'refill' ? 'auto-refill' : 'agent top-up'})`,
          metadata: { purpose: req.purpose, acct: req.accountId, attempt: req.attemptId, credits: String(req.credits), month: req.month },
        },
        { idempotencyKey: req.attemptId },
      )
      return outcomeOf(pi)
    } catch (e) {
      if (e instanceof Stripe.errors.StripeCardError) {
        if (e.code === 'authentication_required' || e.decline_code === 'authentication_required')
          return { kind: 'authentication_required', message: e.message }
        return { kind: 'declined', code: e.decline_code ?? e.code ?? 'card_declined', message: e.message }
      }
      if (e instanceof Stripe.errors.StripeConnectionError || e instanceof Stripe.errors.StripeAPIError)
        return { kind: 'unknown', message: e.message }
      // A detached or otherwise unusable payment method: the card cannot be charged.
      if (e instanceof Stripe.errors.StripeInvalidRequestError) return { kind: 'declined', code: e.code ?? 'invalid_request', message: e.message }
      throw e
    }
  }

  /**
   * The customer's PaymentIntents since the month before the attempt's, newest first, until one
   * names the attempt. A list, not the search API: search is eventually consistent, and "no such
   * charge" must not be an answer the index has not caught up with. One customer makes a few dozen
   * charges a month at most (the ceiling, one top-up a day), so this is a page or two.
   */
  async findCharge(q: ChargeQuery): Promise<ChargeLookup> {
    const since = Math.floor(hktMonthStart(q.month) / 1000) - 31 * 86400
    try {
      for await (const pi of this.stripe.paymentIntents.list({ customer: q.customerId, created: { gte: since }, limit: 100 })) {
        const m = pi.metadata ?? {}
        if (m.attempt !== q.attemptId || m.acct !== q.accountId) continue
        const o = outcomeOf(pi)
        return o.kind === 'paid' ? { ...o, purpose: m.purpose === 'refill' ? 'refill' : 'topup' } : o
      }
      return { kind: 'none' }
    } catch (e) {
      if (e instanceof Stripe.errors.StripeConnectionError || e instanceof Stripe.errors.StripeAPIError || e instanceof Stripe.errors.StripeRateLimitError)
        return { kind: 'unknown', message: e.message }
      throw e
    }
  }

  async forgetCard(card: Pick<SavedCard, 'customerId' | 'paymentMethodId'>): Promise<void> {
    try {
      await this.stripe.paymentMethods.detach(card.paymentMethodId)
    } catch (e) {
      // Already detached (or never attached): forgotten either way.
      if (!(e instanceof Stripe.errors.StripeInvalidRequestError)) throw e
    }
  }

  async startCheckout(req: CheckoutRequest): Promise<CheckoutResult> {
    const ref = encodeURIComponent(req.ref)
    const metadata = { purpose: 'pack', acct: req.accountId, credits: String(req.credits) }
    const session = await this.stripe.checkout.sessions.create({
      mode: 'payment',
      client_reference_id: req.accountId,
      line_items: [{ quantity: 1, price_data: { currency: CURRENCY, unit_amount: req.cents, product_data: { name: req.label } } }],
      success_url: `${this.o.baseUrl}/topup/done?ref=${ref}`,
      cancel_url: `${this.o.baseUrl}/topup?ref=${ref}`,
      metadata,
      payment_intent_data: { metadata },
    })
    if (!session.url) throw new Error('stripe: checkout session without url')
    return { kind: 'redirect', url: session.url }
  }

  async refund(chargeId: string, idempotencyKey: string): Promise<void> {
    try {
      await this.stripe.refunds.create({ payment_intent: chargeId }, { idempotencyKey })
    } catch (e) {
      // Refunded already (in the dashboard, say): the money is back with the payer either way.
      if (e instanceof Stripe.errors.StripeInvalidRequestError && e.code === 'charge_already_refunded') return
      // A 4xx refusal is a definite no. A connection failure, a timeout or a 5xx may hide a refund
      // Stripe made: unknown, thrown as it is.
      if (e instanceof Stripe.errors.StripeInvalidRequestError || e instanceof Stripe.errors.StripeCardError) throw new RefundRefusedError(e.message)
      throw e
    }
  }

  async webhook(rawBody: string, signature: string | null): Promise<GatewayEvent> {
    let event: Stripe.Event
    try {
      // The async variant: Bun loads the SDK's web build, whose crypto is SubtleCrypto.
      event = await this.stripe.webhooks.constructEventAsync(rawBody, signature ?? '', this.o.webhookSecret)
    } catch (e) {
      throw new WebhookSignatureError(e instanceof Error ? e.message : String(e))
    }
    const ignored: GatewayEvent = { type: 'ignored', eventId: event.id, eventType: event.type }
    switch (event.type) {
      case 'checkout.session.completed':
      case 'checkout.session.async_payment_succeeded': {
        const session = event.data.object
        if (session.mode === 'setup') {
          const completion = await this.completion(session)
          return completion ? { type: 'consent_completed', eventId: event.id, completion } : ignored
        }
        const m = session.metadata ?? {}
        const credits = Number(m.credits)
        const chargeId = idOf(session.payment_intent)
        if (session.mode !== 'payment' || session.payment_status !== 'paid' || m.purpose !== 'pack') return ignored
        if (!isAccountId(m.acct ?? '') || !Number.isSafeInteger(credits) || credits <= 0 || !chargeId) return ignored
        return { type: 'checkout_paid', eventId: event.id, accountId: m.acct!, credits, chargeId }
      }
      case 'payment_intent.succeeded': {
        // Refills are credited when the PaymentIntent call returns; this event heals a crash between
        // the charge and the credit (the credit script dedupes by charge id).
        const pi = event.data.object
        const m = pi.metadata ?? {}
        const credits = Number(m.credits)
        if ((m.purpose !== 'refill' && m.purpose !== 'topup') || !isAccountId(m.acct ?? '') || !MONTH_RE.test(m.month ?? '')) return ignored
        if (!Number.isSafeInteger(credits) || credits <= 0) return ignored
        return { type: 'charge_succeeded', eventId: event.id, accountId: m.acct!, credits, chargeId: pi.id, attemptId: m.attempt ?? '', month: m.month!, purpose: m.purpose }
      }
      case 'payment_intent.payment_failed': {
        // Settles a refill whose synchronous answer was unknown: its amount stops counting as pending.
        const pi = event.data.object
        const m = pi.metadata ?? {}
        if ((m.purpose !== 'refill' && m.purpose !== 'topup') || !isAccountId(m.acct ?? '') || !MONTH_RE.test(m.month ?? '') || !m.attempt) return ignored
        const code = pi.last_payment_error?.decline_code ?? pi.last_payment_error?.code ?? 'payment_failed'
        return { type: 'charge_failed', eventId: event.id, accountId: m.acct!, attemptId: m.attempt, month: m.month!, code }
      }
      case 'charge.refunded': {
        // amount_refunded is cumulative: each partial refund's event carries the total so far.
        const charge = event.data.object
        return (await this.reversal(event.id, idOf(charge.payment_intent), 'refund', charge.amount_refunded)) ?? ignored
      }
      case 'charge.dispute.created': {
        const dispute = event.data.object
        return (await this.reversal(event.id, idOf(dispute.payment_intent), 'dispute', dispute.amount)) ?? ignored
      }
      default:
        return ignored
    }
  }

  /**
   * A refund or dispute of one of our charges, named by the PaymentIntent we credited. Neither the
   * charge nor the dispute carries our metadata (the PaymentIntent does), so the PaymentIntent is
   * read: its `acct`, its amount and its credits. Null (ignored) for a charge that is not ours; a Stripe failure
   * propagates, and Stripe delivers the event again.
   */
  private async reversal(eventId: string, paymentIntentId: string | null, cause: 'refund' | 'dispute', cents: number): Promise<GatewayEvent | null> {
    if (!paymentIntentId || !Number.isSafeInteger(cents) || cents <= 0) return null
    let pi: Stripe.PaymentIntent
    try {
      pi = await this.stripe.paymentIntents.retrieve(paymentIntentId)
    } catch (e) {
      if (e instanceof Stripe.errors.StripeInvalidRequestError && (e.code === 'resource_missing' || e.statusCode === 404)) return null
      throw e
    }
    const m = pi.metadata ?? {}
    if ((m.purpose !== 'refill' && m.purpose !== 'topup' && m.purpose !== 'pack') || !isAccountId(m.acct ?? '')) return null
    if (!Number.isSafeInteger(pi.amount) || pi.amount <= 0) return null
    // The credits the charge pays for, as its credit event will say (metadata `credits`).
    const credits = Number(m.credits)
    const chargeCredits = Number.isSafeInteger(credits) && credits > 0 ? credits : null
    return { type: 'charge_reversed', eventId, accountId: m.acct!, chargeId: pi.id, cause, reversedCents: cents, chargeCents: pi.amount, chargeCredits }
  }
}
