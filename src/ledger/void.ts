/**
 * A debited request that never left for its provider: the provider key could not be had (no
 * vaulted key, an unreadable one, the vault down). The key is read only after the debit so that
 * agent state and the rate limit are answered first and a refused token never reaches the vault
 * (CONTRACT §6); the price of that order is this reversal on the rare path without a key.
 * The debit is refunded and the call filed as refunded (outcome `no_key`), which also frees its
 * Idempotency-Key for a retry once the key is linked: the same settlement as a provider failure.
 * errors: the key lookup's own, passed on after the void; a void that fails (Redis down) is logged
 * and left to the sweeper, which refunds the call at its deadline.
 */
import type { Principal } from '../auth/principal'
import type { Log } from '../log'
import { recordCall } from './calls'
import type { RedisContext } from '../redis/context'
import type { DebitOutcome } from './debit'
import { refund } from './refund'

export interface VoidRequest {
  principal: Principal
  debit: Extract<DebitOutcome, { kind: 'debited' }>
  /** Capability slug or `proxy:<provider>`, as debited. */
  target: string
  price: number
  idempotencyKey?: string
}

/** The provider key, read past the debit; without one the debit is voided and the error passed on. */
export async function keyAfterDebit(ctx: RedisContext, log: Log, v: VoidRequest, lookup: () => Promise<string>): Promise<string> {
  try {
    return await lookup()
  } catch (e) {
    await voidDebit(ctx, v).catch((err) => log.error('void_debit_failed', { call_id: v.debit.callId, error: String(err) }))
    throw e
  }
}

export async function voidDebit(ctx: RedisContext, v: VoidRequest): Promise<void> {
  const { principal, debit: d } = v
  await refund(ctx, { accountId: principal.accountId, agentId: principal.agentId, callId: d.callId, day: d.day, reason: 'no_key' })
  await recordCall(
    ctx,
    principal.accountId,
    {
      call_id: d.callId,
      slug: v.target,
      agent_id: principal.agentId,
      charged: v.price,
      refunded: true,
      outcome: 'no_key',
      http_status: null,
      latency_ms: Math.max(0, ctx.clock.now() - d.at),
      at: new Date(d.at).toISOString(),
    },
    { idempotencyKey: v.idempotencyKey },
  )
}
