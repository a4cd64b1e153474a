/**
 * One refill under the mandate, and the background auto-refill loop.
 *
 * A refill is: reserve-refill.lua (every rule, then the account's refill lock) → the off-session
 * charge at the processor (idempotency key = attempt id) → credit-topup.lua (credited once per
 * charge id, or parked over the cap) or release-refill.lua (refused). When the charge's outcome is
 * unknown (network, `processing`), the lock is left to lapse but the amount stays pending against
 * the month's ceiling until its outcome is known: Stripe's `payment_intent.succeeded` (credited) or
 * `payment_intent.payment_failed` (released) webhook, or — since a charge that never reached Stripe
 * has no webhook — the look-up every refill first makes of the account's lapsed attempts
 * (late-outcome.ts: credited, released, or released as never charged).
 *
 * Auto-refill: debit.lua flags a debit that leaves the balance under the threshold and debit()
 * calls `trigger()`. Triggers are coalesced per account: while a refill runs, further triggers
 * ask for one more attempt after it (if the balance is still under the threshold then). When
 * another instance holds the lock, this one waits for it and then checks again — so "one refill
 * per below-threshold debit, never two at once" holds across instances.
 * errors: none thrown from trigger(); refill() returns outcomes and throws only on Redis failure.
 */
import type { Config } from '../config'
import type { RedisContext } from '../redis/context'
import { creditCharge, releaseRefill, reserveRefill, type RefillMode } from '../ledger/topup'
import type { Log } from '../log'
import type { Mailer } from '../mail/mailer'
import { centsOf } from '../payments/amounts'
import type { ChargeOutcome, PaymentGateway } from '../payments/gateway'
import { ScriptStatus as S } from '../redis/codes'
import { emitEvent } from '../events/emit'
import { accountLinks } from '../payments/payment-required'
import { notifyRefillFailure } from './notify'
import { LapsedAttempts } from './late-outcome'
import { readMandate } from './store'
import { readAccount } from '../redis/account-hash'

export interface RefillDeps {
  ctx: RedisContext
  cfg: Config
  payments: PaymentGateway
  mailer: Mailer
  log: Log
}

export type RefillResult =
  | { kind: 'credited'; credits: number; balance: number; chargeId: string }
  | { kind: 'parked'; credits: number; balance: number; balanceCap: number; parkedId: string; chargeId: string }
  /** A rule refused it before any charge: status and the script's numbers. */
  | { kind: 'refused'; status: S; a: number; b: number; c: number; d: number }
  | { kind: 'declined'; credits: number; code: string; message: string; card: string }
  | { kind: 'authentication_required'; credits: number; message: string; card: string }
  | { kind: 'unknown'; message: string }

/** Poll interval while another instance holds the refill lock, and how long to wait at most. */
const LOCK_POLL_MS = 25
const LOCK_WAIT_MAX_MS = 30_000

export class Refiller {
  private loops = new Map<string, { again: boolean }>()
  private tasks = new Set<Promise<void>>()
  private stopped = false
  private lapsed: LapsedAttempts

  constructor(private d: RefillDeps) {
    this.lapsed = new LapsedAttempts(d)
  }

  /** Starts (or asks for one more round of) the background auto-refill of an account. */
  trigger(accountId: string): void {
    if (this.stopped) return
    const loop = this.loops.get(accountId)
    if (loop) {
      loop.again = true
      return
    }
    const state = { again: false }
    this.loops.set(accountId, state)
    const task: Promise<void> = this.autoLoop(accountId, state)
      .catch((e) => this.d.log.error('auto_refill_failed', { account_id: accountId, error: e instanceof Error ? e.message : String(e) }))
      .finally(() => {
        this.loops.delete(accountId)
        this.tasks.delete(task)
      })
    this.tasks.add(task)
  }

  private async autoLoop(accountId: string, state: { again: boolean }): Promise<void> {
    let waited = 0
    for (;;) {
      state.again = false
      const r = await this.refill(accountId, 'auto')
      if (r.kind === 'refused' && r.status === S.REFILL_IN_FLIGHT) {
        // Another instance is refilling: once it is done, the debit that triggered us still counts.
        if (this.stopped || waited >= LOCK_WAIT_MAX_MS) return
        await Bun.sleep(LOCK_POLL_MS)
        waited += LOCK_POLL_MS
        continue
      }
      if (r.kind !== 'credited' || !state.again || this.stopped) return
    }
  }

  /** Resolves when no background refill is running (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.tasks.size > 0) await Promise.allSettled([...this.tasks])
  }

  async stop(): Promise<void> {
    this.stopped = true
    await this.idle()
  }

  /** One refill: 'auto' (background, threshold rule) or 'topup' (the agent's explicit request). */
  async refill(accountId: string, mode: RefillMode, credits: number | null = null): Promise<RefillResult> {
    const { ctx, payments, log } = this.d
    // Earlier attempts whose answer was lost are settled first: their pending amounts may be what
    // stands between this refill and the month's ceiling.
    await this.lapsed.settle(accountId)
    const res = await reserveRefill(ctx, accountId, mode, credits, payments.mode)
    if (res.kind === 'refused') return { kind: 'refused', status: res.status, a: res.a, b: res.b, c: res.c, d: res.d }
    const r = res.r
    const cents = centsOf(r.credits, this.d.cfg.CREDITS_PER_USD)
    let outcome: ChargeOutcome
    // The card charged, as the refusal below names it (a consent may replace it meanwhile).
    const charged = (await readMandate(ctx, accountId)).card
    const card = charged?.paymentMethodId === r.paymentMethodId ? `${charged.brand} ending ${charged.last4}` : 'saved card'
    if (cents === null) {
      outcome = { kind: 'declined', code: 'amount_not_chargeable', message: `${r.credits} credits is not a whole number of cents` }
    } else {
      try {
        outcome = await payments.charge({
          accountId,
          card: { brand: charged?.brand ?? '', last4: charged?.last4 ?? '', customerId: r.customerId, paymentMethodId: r.paymentMethodId },
          credits: r.credits,
          cents,
          attemptId: r.attemptId,
          purpose: mode === 'auto' ? 'refill' : 'topup',
          month: r.month,
        })
      } catch (e) {
        outcome = { kind: 'unknown', message: e instanceof Error ? e.message : String(e) }
      }
    }

    if (outcome.kind === 'paid') {
      const credited = await creditCharge(ctx, {
        accountId,
        chargeId: outcome.chargeId,
        credits: r.credits,
        kind: mode === 'auto' ? 'refill' : 'topup',
        attemptId: r.attemptId,
        month: r.month,
        gateway: payments.mode,
      })
      log.info('refill_paid', { account_id: accountId, mode, credits: r.credits, charge_id: outcome.chargeId, result: credited.kind })
      switch (credited.kind) {
        case 'credited':
          return { kind: 'credited', credits: r.credits, balance: credited.balance, chargeId: outcome.chargeId }
        case 'parked':
          return { kind: 'parked', credits: r.credits, balance: credited.balance, balanceCap: credited.balanceCap, parkedId: credited.parkedId, chargeId: outcome.chargeId }
        case 'duplicate':
          // The webhook was faster: same charge, credited (or parked) once, answered as if this credit had done it.
          return credited.state === 'credited'
            ? { kind: 'credited', credits: r.credits, balance: credited.balance, chargeId: outcome.chargeId }
            : { kind: 'parked', credits: r.credits, balance: credited.balance, balanceCap: credited.balanceCap, parkedId: credited.parkedId ?? '', chargeId: outcome.chargeId }
        default:
          return { kind: 'unknown', message: 'account not found' }
      }
    }
    if (outcome.kind === 'unknown') {
      log.warn('refill_outcome_unknown', { account_id: accountId, attempt: r.attemptId, error: outcome.message })
      return outcome
    }

    const code = outcome.kind === 'declined' ? outcome.code : 'authentication_required'
    const released = await releaseRefill(ctx, accountId, r, outcome.kind, code)
    log.warn('refill_refused', { account_id: accountId, mode, credits: r.credits, outcome: outcome.kind, code })
    // Every channel of the owner (webhook, chat) hears it too; the id is fixed by the attempt.
    const { mref } = await readAccount(ctx, accountId, 'mref')
    await emitEvent(
      ctx,
      accountId,
      'refill.failed',
      { credits: r.credits, reason: outcome.kind, code, message: outcome.message, card, enable_url: accountLinks(this.d, mref ?? '').enable_auto_refill, mode },
      { id: `evt_${r.attemptId}_failed` },
    )
    // The agent hears about an explicit top-up in its answer; the owner must hear about the rest —
    // unless the card was replaced meanwhile: nothing was held against the new one, nothing to fix.
    if ((mode === 'auto' || outcome.kind === 'authentication_required') && released !== 'replaced')
      await notifyRefillFailure(this.d, accountId, { kind: outcome.kind, credits: r.credits, card, message: outcome.message })
    return outcome.kind === 'declined'
      ? { kind: 'declined', credits: r.credits, code: outcome.code, message: outcome.message, card }
      : { kind: 'authentication_required', credits: r.credits, message: outcome.message, card }
  }
}
