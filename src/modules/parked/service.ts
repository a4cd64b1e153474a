/**
 * Parked card payments: paid, but past the account's balance cap, so held for the founder.
 * Approve credits them (decide-parked.lua); reject refunds them at the processor, claimed first so an
 * approval cannot race the refund. A refund whose outcome is unknown leaves it `refund_unknown`: it
 * is never approved after a refund that may have been made, and rejecting again settles it.
 * errors: NOT_FOUND, CONFLICT (already decided, or the refund failed).
 */
import { ApiError } from '../../errors'
import { decideParked, shardOfParked } from '../../ledger/topup'
import { SHARDS } from '../../redis/keys'
import { RefundRefusedError } from '../../payments/gateway'
import type { Services } from '../../services'

type Row = { id: string; account_id: string; charge_id: string; credits: number; kind: string; gateway: string; state: string; at: string }

function row(id: string, h: Record<string, string>): Row {
  return {
    id,
    account_id: h.acct ?? '',
    charge_id: h.charge ?? '',
    credits: Number(h.credits ?? 0),
    kind: h.kind ?? '',
    gateway: h.gateway ?? '',
    state: h.state ?? '',
    at: new Date(Number(h.at ?? 0)).toISOString(),
  }
}

/** Every parked payment awaiting a decision, oldest first, over all shards. */
export async function listParked(s: Services): Promise<{ parked: Row[] }> {
  const { redis, keys } = s.ctx
  const perShard = await Promise.all(
    Array.from({ length: SHARDS }, async (_, shard) => {
      const ids = await redis.zrange(keys.parkedQueue(shard), 0, -1)
      return Promise.all(ids.map(async (id) => row(id, await redis.hgetall(keys.parked(shard, id)))))
    }),
  )
  return { parked: perShard.flat().sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0)) }
}

async function load(s: Services, id: string): Promise<Row> {
  const shard = shardOfParked(id)
  const h = shard === null ? {} : await s.ctx.redis.hgetall(s.ctx.keys.parked(shard, id))
  if (!h.acct) throw new ApiError('NOT_FOUND', { resource: 'parked payment' })
  return row(id, h)
}

const decided = (state: string) =>
  new ApiError('CONFLICT', {
    reason:
      state === 'refund_unknown'
        ? 'a refund of this parked payment may have been made (the processor did not answer): reject it again to settle it'
        : state === 'rejecting'
          ? 'a rejection of this parked payment is under way; if it never finished, reject it again 5 minutes after it started (the same refund, never a second)'
          : `this parked payment is already ${state}`,
  })

export async function approveParked(s: Services, id: string) {
  const p = await load(s, id)
  const out = await decideParked(s.ctx, id, p.account_id, 'approve')
  if (out.kind === 'wrong_state') throw decided(out.state)
  if (out.kind === 'not_found') throw new ApiError('NOT_FOUND', { resource: 'parked payment' })
  s.log.info('parked_approved', { parked_id: id, account_id: p.account_id, credits: out.credits })
  return { id, state: 'approved', account_id: p.account_id, credits: out.credits, charge_id: out.chargeId, balance: out.balance }
}

export async function rejectParked(s: Services, id: string) {
  const p = await load(s, id)
  const claim = await decideParked(s.ctx, id, p.account_id, 'claim')
  if (claim.kind === 'wrong_state') throw decided(claim.state)
  if (claim.kind === 'not_found') throw new ApiError('NOT_FOUND', { resource: 'parked payment' })
  try {
    // Keyed by the parked id: a retried rejection never refunds twice.
    await s.payments.refund(claim.chargeId, `refund-${id}`)
  } catch (e) {
    s.log.error('parked_refund_failed', { parked_id: id, refused: e instanceof RefundRefusedError, error: e instanceof Error ? e.message : String(e) })
    // Only a refund the processor refused gives the payment back to the founder's choice. Any
    // other failure may hide a refund that was made: the payment moves to `refund_unknown`, where
    // it can no longer be approved (credited on top of the refund); rejecting again asks for the
    // same refund.
    if (e instanceof RefundRefusedError) {
      await decideParked(s.ctx, id, p.account_id, 'unclaim')
      throw new ApiError('CONFLICT', { reason: 'the payment processor refused the refund; the payment is still parked, try again' })
    }
    await decideParked(s.ctx, id, p.account_id, 'unknown')
    throw new ApiError('CONFLICT', {
      reason: 'the refund’s outcome is not known (the payment processor did not answer); reject it again to settle it — the same refund, never a second one',
    })
  }
  await decideParked(s.ctx, id, p.account_id, 'reject')
  s.log.info('parked_rejected', { parked_id: id, account_id: p.account_id, credits: claim.credits })
  return { id, state: 'rejected', account_id: p.account_id, credits: claim.credits, charge_id: claim.chargeId, balance: null }
}
