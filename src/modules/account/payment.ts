/**
 * PAYMENT_REQUIRED with everything the agent needs to unblock itself (CONTRACT §3): a sentence
 * for the human, the consent page of the auto-refill mandate, and the top-up route.
 */
import { ApiError } from '../../errors'
import type { Services } from '../../services'

export function accountLinks(s: Services, mandateRef: string) {
  return { topup: `${s.cfg.BASE_URL}/v1/topup`, enable_auto_refill: `${s.cfg.BASE_URL}/mandate?ref=${mandateRef}` }
}

export async function paymentRequired(
  s: Services,
  accountId: string,
  balance: number,
  price: number,
  reason: 'insufficient_balance' | 'no_mandate' = 'insufficient_balance',
): Promise<ApiError> {
  const mref = (await s.ctx.redis.hget(s.ctx.keys.account(accountId), 'mref')) ?? ''
  const links = accountLinks(s, mref)
  const usd = (n: number) => `$${(n / s.cfg.CREDITS_PER_USD).toFixed(2)}`
  const human_readable =
    reason === 'no_mandate'
      ? `Your agent asked for a top-up, but auto-refill is not set up. To let it refill itself within limits you choose, open ${links.enable_auto_refill} and save a card.`
      : `Your agent needs ${price} credits (${usd(price)}) for its next call but has ${balance} (${usd(balance)}). Add credits, or let it refill itself within limits you choose by opening ${links.enable_auto_refill}.`
  return new ApiError('PAYMENT_REQUIRED', {
    human_readable,
    enable_url: links.enable_auto_refill,
    balance,
    price,
    topup_url: links.topup,
    reason,
  })
}
