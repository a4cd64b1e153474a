/**
 * PAYMENT_REQUIRED with everything the agent needs to unblock itself (docs/api.md §3): a sentence
 * for the human, the consent page of the auto-refill mandate, and the top-up route.
 */
import { ApiError } from '../errors'
import { packs } from './amounts'
import type { Config } from '../config'
import type { RedisContext } from '../redis/context'
import { readAccount } from '../redis/account-hash'

/** What the builders need: the base URL and prices from config, the account hash from Redis. */
type Deps = { cfg: Config; ctx: RedisContext }

/**
 * `topup` is the agent's own top-up (POST, through the mandate). The rest are for the human behind
 * the agent, keyed by the account's unguessable mandate ref: `enable_auto_refill` is the saved-card
 * consent page, `buy_credits` a page to buy a credit pack once, `packs` each pack's payment link
 * (Stripe Checkout; sandbox: our own form).
 */
export function accountLinks(s: Pick<Deps, 'cfg'>, mandateRef: string) {
  const ref = encodeURIComponent(mandateRef)
  return {
    topup: `${s.cfg.BASE_URL}/v1/topup`,
    enable_auto_refill: `${s.cfg.BASE_URL}/mandate?ref=${ref}`,
    buy_credits: `${s.cfg.BASE_URL}/topup?ref=${ref}`,
    packs: packs(s.cfg.CREDITS_PER_USD).map((p) => ({
      credits: p.credits,
      price_usd: (p.cents / 100).toFixed(2),
      url: `${s.cfg.BASE_URL}/topup?ref=${ref}&pack=${p.id}`,
    })),
  }
}

export async function paymentRequired(
  s: Deps,
  accountId: string,
  balance: number,
  price: number,
  opt: {
    reason?: 'insufficient_balance' | 'no_mandate' | 'card_declined'
    /** card_declined: the card and the processor's words, for the human. */
    declined?: { card: string; message: string }
    /** The mandate ref when the caller has it already (debit.lua returns it with the refusal). */
    mandateRef?: string
    /** The refused agent: it may ask its operator for a top-up (docs/api.md §11). */
    agentId?: string | null
    /** A metered request's largest output ceiling that fits (0 when none): docs/api.md §7. */
    affordableMaxTokens?: number
  } = {},
): Promise<ApiError> {
  const { reason = 'insufficient_balance', declined } = opt
  const mref = opt.mandateRef ?? (await readAccount(s.ctx, accountId, 'mref')).mref ?? ''
  const links = accountLinks(s, mref)
  const usd = (n: number) => `$${(n / s.cfg.CREDITS_PER_USD).toFixed(2)}`
  const human_readable =
    reason === 'no_mandate'
      ? `Your agent asked for a top-up, but auto-refill is not set up. To let it refill itself within limits you choose, open ${links.enable_auto_refill} and save a card. Or add credits once at ${links.buy_credits}.`
      : reason === 'card_declined'
        ? `Your agent tried to top up ${price} credits (${usd(price)}) with your saved card (${declined?.card ?? 'card'}), but it was declined: ${declined?.message ?? 'declined'}. Save another card at ${links.enable_auto_refill}, or add credits at ${links.buy_credits}.`
        : `Your agent needs ${price} credits (${usd(price)}) for its next call but has ${balance} (${usd(balance)}). Add credits at ${links.buy_credits}, or let it refill itself within limits you choose by opening ${links.enable_auto_refill}.`
  return new ApiError('PAYMENT_REQUIRED', {
    human_readable,
    enable_url: links.enable_auto_refill,
    balance,
    price,
    topup_url: links.topup,
    reason,
    ...(opt.agentId ? { propose_via: 'POST /v1/proposals', kind: 'topup' } : {}),
    ...(opt.affordableMaxTokens !== undefined ? { affordable_max_tokens: opt.affordableMaxTokens } : {}),
  })
}
