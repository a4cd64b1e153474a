/** set-mandate.lua: every change of an auto-refill mandate (see its Lua header). */
import { ScriptStatus as S } from '../redis/codes'
import type { Limits, SavedCard } from '../payments/gateway'
import type { RedisContext } from '../redis/context'
import { statusOf, str, unexpected } from './reply'

export type MandateOp =
  /** started: the consent completes a session recorded by 'start' (else it was saved in this request). */
  | { op: 'consent'; card: SavedCard; limits: Limits; consentId: string; gateway: string; started: boolean }
  | { op: 'update'; threshold?: number; refill?: number; ceiling?: number; enabled?: boolean }
  | { op: 'forget'; reason: string }
  /** The owner started a processor session: the only one a consent may now complete. */
  | { op: 'start'; customerId: string; sessionId: string }

export type SetMandateReply =
  /**
   * consent: the card saved, and `replaced` the card it took the place of (to detach at its
   * processor); forget: the card just forgotten (both '' otherwise).
   */
  | { status: 'ok'; customerId: string; paymentMethodId: string; replaced?: { customerId: string; paymentMethodId: string; gateway: string } }
  | { status: 'already_applied' }
  /** consent: not the session the owner started last, or started before the card was forgotten. */
  | { status: 'consent_stale' }
  | { status: 'consent_required' }
  | { status: 'not_found' }

function argsOf(o: MandateOp): (string | number)[] {
  const opt = (v: number | undefined) => (v === undefined ? '' : v)
  switch (o.op) {
    case 'consent':
      return [o.card.brand, o.card.last4, o.card.customerId, o.card.paymentMethodId, o.limits.threshold, o.limits.refill, o.limits.ceiling, o.consentId, o.gateway, o.started ? '1' : '']
    case 'update':
      return [opt(o.threshold), opt(o.refill), opt(o.ceiling), o.enabled === undefined ? '' : o.enabled ? '1' : '0']
    case 'forget':
      return [o.reason]
    case 'start':
      return [o.customerId, o.sessionId]
  }
}

export async function runSetMandate(ctx: RedisContext, accountId: string, now: number, o: MandateOp): Promise<SetMandateReply> {
  const { keys } = ctx
  const reply = await ctx.scripts.setMandate([keys.mandate(accountId), keys.account(accountId), keys.outbox(keys.shardOf(accountId))], [now, accountId, o.op, ...argsOf(o)])
  switch (statusOf(reply)) {
    case S.OK: {
      const ok = { status: 'ok' as const, customerId: str(reply, 1), paymentMethodId: str(reply, 2) }
      const old = o.op === 'consent' ? str(reply, 4) : ''
      return old ? { ...ok, replaced: { customerId: str(reply, 3), paymentMethodId: old, gateway: str(reply, 5) } } : ok
    }
    case S.ALREADY_APPLIED:
      return { status: 'already_applied' }
    case S.CONSENT_STALE:
      return { status: 'consent_stale' }
    case S.CONSENT_REQUIRED:
      return { status: 'consent_required' }
    case S.NOT_FOUND:
      return { status: 'not_found' }
    default:
      throw unexpected('set-mandate.lua', reply)
  }
}
