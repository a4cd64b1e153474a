/**
 * Money a human pays in: credit packs (Stripe Checkout, or the sandbox form) and Stripe's webhook,
 * which also completes saved-card consents and settles refills whose answer was lost (credited, or
 * released from the month's pending amount) through settleLate, as the refiller's look-up does.
 * Every credit goes through credit-topup.lua: once per charge id, parked when past the balance cap.
 * A refund or dispute of a credited charge takes its credits back through reverse-charge.lua
 * (src/ledger/reversal.ts), once per reversed amount; one that arrives before the charge's credit
 * is recorded, and the credit deducts it (credit-topup.lua, decide-parked.lua).
 * errors: BAD_REQUEST (webhook signature), NOT_CONFIGURED (webhook in sandbox mode).
 */
import { notConfigured } from '../../alarms/not-configured'
import { ApiError } from '../../errors'
import { hktDay } from '../../clock'
import { creditCharge, type CreditOutcome } from '../../ledger/topup'
import { reverseCharge } from '../../ledger/reversal'
import { WebhookSignatureError, type GatewayEvent } from '../../payments/gateway'
import type { Services } from '../../services'
import { applyConsent } from '../../mandate/mandate'
import { settleLate } from '../../mandate/late-outcome'

/** Processed event ids are kept past Stripe's 3-day retry window. */
const EVENT_TTL_S = 30 * 86400

export async function creditPack(s: Services, accountId: string, credits: number, chargeId: string): Promise<CreditOutcome> {
  const out = await creditCharge(s.ctx, { accountId, chargeId, credits, kind: 'pack', gateway: s.payments.mode })
  if (out.kind === 'parked') s.log.warn('payment_parked', { account_id: accountId, charge_id: chargeId, credits, parked_id: out.parkedId })
  return out
}

/** Applies one verified event; returns what it did (for logs and the webhook's answer). */
async function apply(s: Services, ev: GatewayEvent): Promise<string> {
  switch (ev.type) {
    case 'consent_completed':
      // A late or redelivered event of an older session answers consent_stale: acknowledged, not applied.
      return `consent_${await applyConsent(s, ev.completion.accountId, ev.completion, true)}`
    case 'checkout_paid':
      return (await creditPack(s, ev.accountId, ev.credits, ev.chargeId)).kind
    case 'charge_succeeded': {
      const attempt = { attemptId: ev.attemptId, month: ev.month, day: hktDay(s.ctx.clock.now()) }
      return settleLate(s.ctx, s.payments.mode, ev.accountId, attempt, { kind: 'paid', chargeId: ev.chargeId, credits: ev.credits, purpose: ev.purpose })
    }
    case 'charge_failed': {
      const attempt = { attemptId: ev.attemptId, month: ev.month, day: hktDay(s.ctx.clock.now()) }
      return settleLate(s.ctx, s.payments.mode, ev.accountId, attempt, { kind: 'declined', code: ev.code })
    }
    case 'charge_reversed': {
      const out = await reverseCharge(s.ctx, s.db.db, {
        accountId: ev.accountId,
        chargeId: ev.chargeId,
        cause: ev.cause,
        reversedCents: ev.reversedCents,
        chargeCents: ev.chargeCents,
        chargeCredits: ev.chargeCredits,
      })
      const at = { account_id: ev.accountId, charge_id: ev.chargeId, cause: ev.cause, reversed_cents: ev.reversedCents }
      // Acknowledged either way (a retry would find the same): logged for the founder to look at.
      if (out.kind === 'not_credited' || out.kind === 'no_account') s.log.warn(`reversal_${out.kind}`, at)
      else if (out.kind === 'reversed') s.log.info('payment_reversed', { ...at, taken: out.taken, unrecovered: out.unrecovered, mandate_disabled: out.mandateDisabled })
      // Before the charge's credit: the credit (or the founder's approval) deducts it.
      else if (out.kind === 'recorded') s.log.info('reversal_before_credit', { ...at, parked_reversed: out.parkedReversed, mandate_disabled: out.mandateDisabled })
      return out.kind === 'reversed' ? 'reversed' : out.kind
    }
    case 'ignored':
      return 'ignored'
  }
}

export async function receiveWebhook(s: Services, rawBody: string, signature: string | null) {
  if (s.payments.mode !== 'stripe') throw notConfigured('stripe')
  let ev: GatewayEvent
  try {
    ev = await s.payments.webhook(rawBody, signature)
  } catch (e) {
    if (e instanceof WebhookSignatureError) {
      s.log.warn('webhook_rejected', { reason: e.message.slice(0, 120) })
      throw new ApiError('BAD_REQUEST', { field: 'Stripe-Signature', expected: 'a valid signature of this payload by the endpoint secret' })
    }
    throw e
  }
  const key = s.ctx.keys.webhookEvent(ev.eventId)
  if (await s.ctx.redis.exists(key)) return { received: true, duplicate: true, result: 'duplicate' }
  const result = await apply(s, ev)
  // Marked only once applied: a crash before this line makes Stripe's retry apply it (the credit
  // script's charge-id dedupe keeps that retry from crediting twice).
  await s.ctx.redis.set(key, result, 'EX', EVENT_TTL_S)
  s.log.info('webhook', { event_id: ev.eventId, type: ev.type, result })
  return { received: true, duplicate: false, result }
}
