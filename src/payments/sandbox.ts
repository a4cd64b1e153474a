/**
 * The sandbox gateway — DEVELOPMENT ONLY: no money moves. The test card 4242 4242 4242 4242 is
 * approved; every other number is declined. Saved cards always charge successfully, so an
 * installation without Stripe keys can exercise every credit path end to end.
 */
import { randomId } from '../auth/tokens'
import type {
  ChargeLookup,
  ChargeOutcome,
  CheckoutResult,
  ConsentLookup,
  ConsentResult,
  GatewayEvent,
  PaymentGateway,
} from './gateway'

export const SANDBOX_CARD = '4242424242424242'

const DECLINED =
  'Card declined. This is the sandbox (no real payments): only the test card 4242 4242 4242 4242 is accepted.'

/** The card number of a form, digits only; null when the field is missing. */
function cardNumber(form: Record<string, string>): string | null {
  const raw = form.card
  return raw === undefined ? null : raw.replace(/[\s-]/g, '')
}

export class SandboxGateway implements PaymentGateway {
  readonly mode = 'sandbox' as const

  async startConsent(req: { accountId: string; customerId: string | null; form: Record<string, string> }): Promise<ConsentResult> {
    if (cardNumber(req.form) !== SANDBOX_CARD) return { kind: 'declined', message: DECLINED }
    return {
      kind: 'saved',
      consentId: 'sbx_seti_' + randomId(),
      card: { brand: 'visa', last4: '4242', customerId: req.customerId ?? 'sbx_cus_' + randomId(), paymentMethodId: 'sbx_pm_' + randomId() },
    }
  }

  async completeConsent(): Promise<ConsentLookup> {
    return { kind: 'pending' }
  }

  async charge(): Promise<ChargeOutcome> {
    return { kind: 'paid', chargeId: 'sbx_ch_' + randomId() }
  }

  /** A sandbox charge is never left unknown, and no money moves: an unsettled attempt charged nothing. */
  async findCharge(): Promise<ChargeLookup> {
    return { kind: 'none' }
  }

  async forgetCard(): Promise<void> {}

  async startCheckout(req: { form: Record<string, string> }): Promise<CheckoutResult> {
    if (cardNumber(req.form) !== SANDBOX_CARD) return { kind: 'declined', message: DECLINED }
    return { kind: 'paid', chargeId: 'sbx_ch_' + randomId() }
  }

  async refund(): Promise<void> {}

  async webhook(): Promise<GatewayEvent> {
    throw new Error('the sandbox gateway has no webhooks')
  }
}
