/**
 * Credits ↔ money. The ledger only knows integer credits; the card networks only know integer
 * cents. A charge therefore must be a whole number of cents, and at least the smallest amount a
 * card processor accepts (Stripe: $0.50), or the refill would fail at the gateway every time.
 */
export const CURRENCY = 'usd'
export const MIN_CHARGE_CENTS = 50

/** Cents of `credits`, or null when the amount is not a whole number of cents. */
export function centsOf(credits: number, creditsPerUsd: number): number | null {
  const scaled = credits * 100
  return scaled % creditsPerUsd === 0 ? scaled / creditsPerUsd : null
}

export function minChargeCredits(creditsPerUsd: number): number {
  return Math.ceil((MIN_CHARGE_CENTS * creditsPerUsd) / 100)
}

/** Why an amount cannot be charged, as a BAD_REQUEST `expected`; null when it can. */
export function chargeableProblem(credits: number, creditsPerUsd: number): string | null {
  const cents = centsOf(credits, creditsPerUsd)
  if (cents === null) return `a whole number of cents (a multiple of ${creditsPerUsd / gcd(creditsPerUsd, 100)} credits)`
  if (cents < MIN_CHARGE_CENTS) return `at least ${minChargeCredits(creditsPerUsd)} credits ($${(MIN_CHARGE_CENTS / 100).toFixed(2)}, the card minimum)`
  return null
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b)
}

export function usd(credits: number, creditsPerUsd: number): string {
  return `$${(credits / creditsPerUsd).toFixed(2)}`
}

/** The fixed credit packs a human can buy through a payment link. */
export interface Pack {
  id: string
  credits: number
  cents: number
}

const PACK_DOLLARS = [5, 20, 50]

export function packs(creditsPerUsd: number): Pack[] {
  return PACK_DOLLARS.map((d) => ({ id: `usd${d}`, credits: d * creditsPerUsd, cents: d * 100 }))
}
