/**
 * The auto-refill mandate: read, adjust, forget, and the completion of a saved-card consent.
 * errors: BAD_REQUEST (limits), CONSENT_REQUIRED (enable before consent), NOT_FOUND (unknown ref).
 */
import { ApiError } from '../errors'
import { nextHktMonthStart } from '../clock'
import { chargeableProblem } from '../payments/amounts'
import type { Limits, SavedCard } from '../payments/gateway'
import { ScriptStatus as S } from '../redis/codes'
import type { Config } from '../config'
import type { RedisContext } from '../redis/context'
import type { Log } from '../log'
import type { PaymentGateway } from '../payments/gateway'
import type { Refiller } from './refill'
import { windowsAt } from '../windows'
import { accountLinks, paymentRequired } from '../payments/payment-required'
import { readMandate, setMandate, type MandateRecord } from './store'
import { readAccount } from '../redis/account-hash'
import { TOPUP_DECLINES_PER_DAY } from '../ledger/topup'


/** What the mandate uses of the process's services. */
export interface MandateDeps {
  cfg: Config
  ctx: RedisContext
  log: Log
  payments: PaymentGateway
  refiller: Refiller
}

/** Limits are credits; a refill must be chargeable (whole cents, the card minimum). */
export const MAX_LIMIT = 1_000_000_000

export function limitProblem(cfg: Config, l: Partial<Limits>): { field: string; expected: string } | null {
  for (const field of ['threshold', 'refill', 'ceiling'] as const) {
    const v = l[field]
    if (v !== undefined && (!Number.isSafeInteger(v) || v < 0 || v > MAX_LIMIT))
      return { field, expected: `an integer number of credits from 0 to ${MAX_LIMIT}` }
  }
  if (l.refill !== undefined && l.refill > 0) {
    const p = chargeableProblem(l.refill, cfg.CREDITS_PER_USD)
    if (p) return { field: 'refill', expected: `0 or ${p}` }
  }
  return null
}

export interface MandateRef {
  accountId: string
  email: string
  mref: string
}

/** The account behind a consent ref (/mandate?ref=, /topup?ref=); unknown → NOT_FOUND. */
export async function resolveRef(s: MandateDeps, ref: string | undefined): Promise<MandateRef> {
  const { redis, keys } = s.ctx
  const accountId = ref && /^mr_[A-Za-z0-9_-]{10,64}$/.test(ref) ? await redis.get(keys.mandateRef(ref)) : null
  if (!accountId) throw new ApiError('NOT_FOUND', { resource: 'mandate link' })
  const email = (await readAccount(s.ctx, accountId, 'email')).email ?? ''
  return { accountId, email, mref: ref! }
}

export async function enableUrl(s: MandateDeps, accountId: string): Promise<string> {
  const mref = (await readAccount(s.ctx, accountId, 'mref')).mref ?? ''
  return accountLinks(s, mref).enable_auto_refill
}

export function mandateBody(m: MandateRecord, enable_url: string) {
  return {
    enabled: m.enabled,
    threshold: m.threshold,
    refill: m.refill,
    ceiling: m.ceiling,
    period: 'month' as const,
    refilled_this_period: m.refilledThisPeriod,
    pending_this_period: m.pendingThisPeriod,
    card: m.card ? { brand: m.card.brand, last4: m.card.last4 } : null,
    enable_url,
    disabled_reason: m.disabledReason,
    last_failure: m.lastFailure,
  }
}

export async function getMandate(s: MandateDeps, accountId: string) {
  const [m, url] = await Promise.all([readMandate(s.ctx, accountId), enableUrl(s, accountId)])
  return mandateBody(m, url)
}

export async function updateMandate(s: MandateDeps, accountId: string, body: Partial<Limits> & { enabled?: boolean }) {
  const problem = limitProblem(s.cfg, body)
  if (problem) throw new ApiError('BAD_REQUEST', problem)
  const reply = await setMandate(s.ctx, accountId, { op: 'update', ...body })
  if (reply.status === 'consent_required') throw new ApiError('CONSENT_REQUIRED', { enable_url: await enableUrl(s, accountId) })
  return getMandate(s, accountId)
}

/** DELETE /v1/mandate: disabled, and the card forgotten here and at the processor. */
export async function forgetMandate(s: MandateDeps, accountId: string) {
  const before = await readMandate(s.ctx, accountId)
  await setMandate(s.ctx, accountId, { op: 'forget', reason: 'deleted' })
  if (before.card && before.gateway === s.payments.mode) {
    // Forgotten locally first: even if the processor call fails, no refill can use the card again.
    await forgetAtProcessor(s, accountId, before.card)
  }
  return getMandate(s, accountId)
}

/**
 * A completed consent: the card is saved and the mandate enabled with the owner's limits.
 * `started`: the consent completes a processor session (Stripe Checkout: the return page or the
 * webhook), which set-mandate.lua applies only if it is the session the owner started last and
 * nothing was forgotten since ('stale' otherwise: nothing changes); false for a card saved in
 * this very request (sandbox).
 */
export async function applyConsent(
  s: MandateDeps,
  accountId: string,
  c: { card: SavedCard; limits: Limits; consentId: string },
  started: boolean,
): Promise<'applied' | 'already' | 'stale'> {
  const reply = await setMandate(s.ctx, accountId, { op: 'consent', card: c.card, limits: c.limits, consentId: c.consentId, gateway: s.payments.mode, started })
  switch (reply.status) {
    case 'not_found':
      throw new ApiError('NOT_FOUND', { resource: 'account' })
    case 'already_applied':
      return 'already'
    case 'consent_stale':
      return 'stale'
    default:
      // A new card replaced a saved one: the old one is detached at its processor, as DELETE
      // detaches a forgotten card (a card the owner replaced must not stay chargeable there).
      if (reply.status === 'ok' && reply.replaced && reply.replaced.gateway === s.payments.mode) await forgetAtProcessor(s, accountId, reply.replaced)
      return 'applied'
  }
}

/** Detaches a card at the processor; a failure is logged, never the owner's error (the card is already gone here). */
async function forgetAtProcessor(s: MandateDeps, accountId: string, card: Pick<SavedCard, 'customerId' | 'paymentMethodId'>): Promise<void> {
  await s.payments.forgetCard(card).catch((e) =>
    s.log.error('forget_card_failed', { account_id: accountId, error: e instanceof Error ? e.message : String(e) }),
  )
}

/** The owner was sent to the processor: only this session may complete a consent from now on. */
export async function startConsent(s: MandateDeps, accountId: string, customerId: string, sessionId: string): Promise<void> {
  const reply = await setMandate(s.ctx, accountId, { op: 'start', customerId, sessionId })
  if (reply.status === 'not_found') throw new ApiError('NOT_FOUND', { resource: 'account' })
}

/**
 * POST /v1/topup: the agent's explicit refill through the owner's mandate.
 * errors: PAYMENT_REQUIRED (no_mandate, card_declined), CONFLICT (one per HKT day, ceiling, in
 *         flight, outcome pending), BALANCE_CAP (parked: true when a charge had to be parked),
 *         CONSENT_REQUIRED (the bank wants the card holder), BAD_REQUEST (amount).
 */
export async function topup(s: MandateDeps, accountId: string, amount: number | undefined) {
  if (amount !== undefined) {
    const p = chargeableProblem(amount, s.cfg.CREDITS_PER_USD)
    if (p) throw new ApiError('BAD_REQUEST', { field: 'amount', expected: p })
  }
  const r = await s.refiller.refill(accountId, 'topup', amount ?? null)
  switch (r.kind) {
    case 'credited':
      return { credits_added: r.credits, balance: r.balance, charge_id: r.chargeId }
    case 'parked':
      throw new ApiError('BALANCE_CAP', { balance_cap: r.balanceCap, balance: r.balance, parked: true, parked_id: r.parkedId })
    case 'declined':
      throw await paymentRequired(s, accountId, await balanceOf(s, accountId), r.credits, { reason: 'card_declined', declined: { card: r.card, message: r.message } })
    case 'authentication_required':
      throw new ApiError('CONSENT_REQUIRED', { enable_url: await enableUrl(s, accountId) })
    case 'unknown':
      // charge_pending: the card may yet be charged, so nothing that caused this top-up may ask again.
      throw new ApiError('CONFLICT', { reason: 'the card payment is still being confirmed by the processor; check GET /v1/balance in a minute', charge_pending: true })
    case 'refused':
      throw await refusal(s, accountId, r, amount)
  }
}

async function refusal(
  s: MandateDeps,
  accountId: string,
  { status, a, b, c, d }: { status: S; a: number; b: number; c: number; d: number },
  amount: number | undefined,
): Promise<ApiError> {
  switch (status) {
    case S.NO_MANDATE: {
      const m = await readMandate(s.ctx, accountId)
      return paymentRequired(s, accountId, await balanceOf(s, accountId), amount ?? m.refill, { reason: 'no_mandate' })
    }
    case S.TOPUP_TODAY:
      return new ApiError('CONFLICT', {
        reason: 'a top-up already ran this HKT day (one per day); auto-refill still works, or try again after 00:00 HKT',
        resets_at: windowsAt(s.ctx.clock.now()).resetsAt,
      })
    case S.CEILING_REACHED:
      return new ApiError('CONFLICT', {
        reason: `this refill period is at its ceiling: ${a} of ${b} credits refilled this HKT month${d > 0 ? ` and ${d} in charges the processor has not confirmed yet` : ''}, ${c} more would pass it; the operator can raise the ceiling via PUT /v1/mandate`,
        refilled_this_period: a,
        pending_this_period: d,
        ceiling: b,
        // The period is the HKT month: its end is when the ceiling frees up again (as resets_at of the daily limits).
        resets_at: new Date(nextHktMonthStart(s.ctx.clock.now())).toISOString(),
      })
    case S.BALANCE_CAP:
      return new ApiError('BALANCE_CAP', { balance_cap: b, balance: a, parked: false })
    case S.REFILL_IN_FLIGHT:
      return new ApiError('CONFLICT', { reason: 'a refill of this account is already in flight; check GET /v1/balance in a few seconds' })
    case S.REFILL_BACKOFF:
      return new ApiError('CONFLICT', {
        reason: `the saved card declined this HKT day's top-ups ${TOPUP_DECLINES_PER_DAY} times, so it is not tried again today; the owner can save another card at ${await enableUrl(s, accountId)}, or try after 00:00 HKT`,
        resets_at: windowsAt(s.ctx.clock.now()).resetsAt,
      })
    case S.REFILL_NOT_NEEDED:
      return new ApiError('BAD_REQUEST', { field: 'amount', expected: "a positive number of credits (the mandate's refill is 0)" })
    default:
      return new ApiError('NOT_FOUND', { resource: 'account' })
  }
}

async function balanceOf(s: MandateDeps, accountId: string): Promise<number> {
  return (await readAccount(s.ctx, accountId, 'balance')).balance ?? 0
}
