/**
 * The payments gateway: the only code that talks to a card processor. Two implementations:
 * `sandbox` (development only: no money moves, the test card 4242 4242 4242 4242 is approved and
 * every other number declined) and `stripe` (the official SDK). Callers never learn which one runs;
 * credits are decided by the ledger scripts, never here.
 */

/** Auto-refill limits, in credits. */
export interface Limits {
  threshold: number
  refill: number
  ceiling: number
}

export interface Card {
  brand: string
  last4: string
}

/** A card saved for off-session charges. */
export interface SavedCard extends Card {
  customerId: string
  paymentMethodId: string
}

export interface ConsentRequest {
  accountId: string
  /** The mandate ref of the consent page (/mandate?ref=). */
  ref: string
  email: string
  limits: Limits
  /** The gateway customer from an earlier consent, reused so one owner is one customer. */
  customerId: string | null
  /** The page's form fields (sandbox: `card`). */
  form: Record<string, string>
}

export type ConsentResult =
  /** Saved at once (sandbox). `consentId` identifies this consent for idempotent completion. */
  | { kind: 'saved'; card: SavedCard; consentId: string }
  /**
   * The owner continues at the processor (Stripe Checkout in setup mode). `sessionId` is what the
   * completion's `consentId` will be: recorded as the one session a consent may complete.
   */
  | { kind: 'redirect'; url: string; customerId: string; sessionId: string }
  | { kind: 'declined'; message: string }

export interface ConsentCompletion {
  accountId: string
  consentId: string
  card: SavedCard
  limits: Limits
}

/** What the return page learns of a setup session from the processor. */
export type ConsentLookup =
  | { kind: 'complete'; completion: ConsentCompletion }
  /** Not complete (yet): the webhook may still complete it. */
  | { kind: 'pending' }
  /** No such session at the processor, or not a card setup of ours (a typo, garbage, another kind of session). */
  | { kind: 'invalid' }

export interface ChargeRequest {
  accountId: string
  card: SavedCard
  credits: number
  cents: number
  /** Idempotency key at the processor: a retried request never charges twice. */
  attemptId: string
  purpose: 'refill' | 'topup'
  /** HKT month of the reservation: lets a late webhook credit the right ceiling window. */
  month: string
}

export type ChargeOutcome =
  | { kind: 'paid'; chargeId: string }
  | { kind: 'declined'; code: string; message: string }
  /** The bank wants the card holder present (SCA): only a new consent can fix it. */
  | { kind: 'authentication_required'; message: string }
  /** Network failure or still processing: the outcome arrives later by webhook, if at all. */
  | { kind: 'unknown'; message: string }

/** An attempt whose charge's answer never arrived, to look up at the processor. */
export interface ChargeQuery {
  accountId: string
  attemptId: string
  /** The saved card's customer: its charges are listed, consistently (not a search index). */
  customerId: string
  /** HKT month of the reservation: bounds how far back the processor's list is read. */
  month: string
}

export type ChargeLookup =
  /** The processor holds no charge of this attempt: it never got there, and never will. */
  | { kind: 'none' }
  | { kind: 'paid'; chargeId: string; purpose: 'refill' | 'topup' }
  | { kind: 'declined'; code: string; message: string }
  | { kind: 'authentication_required'; message: string }
  /** Still processing, or the processor could not be asked: look again later. */
  | { kind: 'unknown'; message: string }

export interface CheckoutRequest {
  accountId: string
  ref: string
  credits: number
  cents: number
  label: string
  form: Record<string, string>
}

export type CheckoutResult =
  | { kind: 'redirect'; url: string }
  /** Paid at once (sandbox); the credit is applied like a Stripe checkout webhook. */
  | { kind: 'paid'; chargeId: string }
  | { kind: 'declined'; message: string }

/** A verified processor event, reduced to what the ledger needs. */
export type GatewayEvent =
  | { type: 'consent_completed'; eventId: string; completion: ConsentCompletion }
  | { type: 'checkout_paid'; eventId: string; accountId: string; credits: number; chargeId: string }
  | { type: 'charge_succeeded'; eventId: string; accountId: string; credits: number; chargeId: string; attemptId: string; month: string; purpose: 'refill' | 'topup' }
  /** An off-session charge failed after all (its synchronous answer was unknown, or lost). */
  | { type: 'charge_failed'; eventId: string; accountId: string; attemptId: string; month: string; code: string }
  /**
   * A charge of ours went back to the payer: refunded (`reversedCents` = the charge's cumulative
   * refunded amount) or disputed (the disputed amount). `chargeId` is the id the charge was
   * credited under (Stripe's PaymentIntent id); `chargeCents` its whole amount; `chargeCredits` the
   * credits it pays for (the PaymentIntent's metadata; null when it has none), what a reversal that
   * arrives before the charge's credit event is reckoned in.
   */
  | { type: 'charge_reversed'; eventId: string; accountId: string; chargeId: string; cause: 'refund' | 'dispute'; reversedCents: number; chargeCents: number; chargeCredits: number | null }
  | { type: 'ignored'; eventId: string; eventType: string }

export class WebhookSignatureError extends Error {}

/**
 * The processor answered that it will not make the refund (a definite no). Any other failure of a
 * refund leaves its outcome unknown: it may have been made, and asking again with the same
 * idempotency key tells.
 */
export class RefundRefusedError extends Error {}

export interface PaymentGateway {
  readonly mode: 'sandbox' | 'stripe'
  startConsent(req: ConsentRequest): Promise<ConsentResult>
  /** Stripe's return page: the setup session, complete (with its card), pending, or invalid. */
  completeConsent(sessionId: string): Promise<ConsentLookup>
  charge(req: ChargeRequest): Promise<ChargeOutcome>
  /** What became of a charge whose outcome was unknown (its attempt id is in its metadata). */
  findCharge(q: ChargeQuery): Promise<ChargeLookup>
  /** Detach the card at the processor (DELETE /v1/mandate forgets it there too). */
  forgetCard(card: Pick<SavedCard, 'customerId' | 'paymentMethodId'>): Promise<void>
  startCheckout(req: CheckoutRequest): Promise<CheckoutResult>
  /**
   * Refund a charge in full (a rejected parked payment). Throws RefundRefusedError when the
   * processor refused it; any other error means its outcome is unknown.
   */
  refund(chargeId: string, idempotencyKey: string): Promise<void>
  /** Verifies the signature and reduces the event; throws WebhookSignatureError when forged. */
  webhook(rawBody: string, signature: string | null): Promise<GatewayEvent>
}
