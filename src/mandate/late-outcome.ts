/**
 * The outcome of a refill or top-up charge that was not known when the charge call returned
 * (network failure, `processing`, a crash between charge and credit). It comes later, from one of
 * two places: Stripe's webhook, or — once the attempt's refill lock has lapsed — a look-up at the
 * processor by the next refill or top-up of the account. Without the look-up, an attempt that never
 * reached Stripe (no PaymentIntent, so no webhook) would hold its amount against the month's
 * ceiling until the month ended.
 *
 * Both paths settle through `settleLate`, i.e. the scripts that settle a charge once:
 * credit-topup.lua (paid; deduped by charge id, so the webhook and the look-up of one charge credit
 * it once) and release-refill.lua (declined, or `void`: the processor holds no such charge; a second
 * release of the same attempt is ALREADY_APPLIED).
 * errors: none thrown by `LapsedAttempts.settle` for the processor (a failed look-up is asked again
 * later); Redis failures propagate.
 */
import { hktDay, hktMonth, previousHktMonth } from '../clock'
import { creditCharge, releaseRefill, type CreditOutcome } from '../ledger/topup'
import type { Log } from '../log'
import type { ChargeLookup, PaymentGateway } from '../payments/gateway'
import type { RedisContext } from '../redis/context'
import { readUnsettled } from './store'

export type LateOutcome =
  | { kind: 'paid'; chargeId: string; credits: number; purpose: 'refill' | 'topup' }
  | { kind: 'declined'; code: string }
  | { kind: 'authentication_required'; code: string }
  /** The processor holds no charge of the attempt: nothing was charged, nothing will be. */
  | { kind: 'void' }

export type LateResult = CreditOutcome['kind'] | 'released' | 'already_settled'

/** Settles one attempt whose outcome arrived late; `day` is the attempt's HKT day when known, else today. */
export async function settleLate(
  ctx: RedisContext,
  gateway: string,
  acct: string,
  a: { attemptId: string; month: string; day: number },
  o: LateOutcome,
): Promise<LateResult> {
  if (o.kind === 'paid') {
    const out = await creditCharge(ctx, { accountId: acct, chargeId: o.chargeId, credits: o.credits, kind: o.purpose, attemptId: a.attemptId, month: a.month, gateway })
    return out.kind
  }
  const released = o.kind === 'void' ? await releaseRefill(ctx, acct, a, 'void', '') : await releaseRefill(ctx, acct, a, o.kind, o.code)
  return released === 'already' ? 'already_settled' : 'released'
}

/** One look-up per attempt at most this often (app clock): a `processing` charge is not polled on every paid call. */
const LOOKUP_EVERY_MS = 60_000

/**
 * Looks up, at the processor, the unsettled attempts of an account whose lock has lapsed (this
 * month's and last month's), and settles those the processor has an answer for. An attempt that
 * still holds an unexpired lock is in flight somewhere and is left alone. Runs before each refill.
 */
export class LapsedAttempts {
  private asked = new Map<string, number>()

  constructor(private d: { ctx: RedisContext; payments: PaymentGateway; log: Log }) {}

  async settle(acct: string): Promise<void> {
    const { ctx, payments, log } = this.d
    const now = ctx.clock.now()
    const month = hktMonth(now)
    const u = await readUnsettled(ctx, acct, [month, previousHktMonth(month)])
    if (u.attempts.length === 0) return
    // A card saved through another gateway cannot be asked about here (nor charged: reserve-refill.lua).
    if (u.gateway !== payments.mode || !u.customerId) return
    for (const at of u.attempts) {
      const holdsLock = u.lock?.attemptId === at.attemptId
      if (holdsLock && u.lock!.until > now) continue
      if (!this.due(at.attemptId, now)) continue
      const found = await payments
        .findCharge({ accountId: acct, attemptId: at.attemptId, customerId: u.customerId, month: at.month })
        .catch((e): ChargeLookup => ({ kind: 'unknown', message: e instanceof Error ? e.message : String(e) }))
      let o: LateOutcome
      switch (found.kind) {
        case 'unknown':
          log.info('refill_still_unknown', { account_id: acct, attempt: at.attemptId, reason: found.message })
          continue
        case 'none':
          o = { kind: 'void' }
          break
        case 'paid':
          o = { kind: 'paid', chargeId: found.chargeId, credits: at.credits, purpose: found.purpose }
          break
        case 'declined':
          o = { kind: 'declined', code: found.code }
          break
        case 'authentication_required':
          o = { kind: 'authentication_required', code: 'authentication_required' }
          break
      }
      const day = holdsLock && u.lock!.day > 0 ? u.lock!.day : hktDay(now)
      const result = await settleLate(ctx, payments.mode, acct, { attemptId: at.attemptId, month: at.month, day }, o)
      this.asked.delete(at.attemptId)
      log.info('refill_settled_late', { account_id: acct, attempt: at.attemptId, found: found.kind, result })
    }
  }

  /** Marks the attempt asked now unless it was asked less than LOOKUP_EVERY_MS ago. */
  private due(attemptId: string, now: number): boolean {
    const last = this.asked.get(attemptId)
    if (last !== undefined && now - last < LOOKUP_EVERY_MS) return false
    if (this.asked.size >= 10_000) for (const [k, t] of this.asked) if (now - t >= LOOKUP_EVERY_MS) this.asked.delete(k)
    this.asked.set(attemptId, now)
    return true
  }
}
