/**
 * A metered call's exact cost (docs/api.md §7), the one function every answer that shows it uses:
 * micro-credits from the usage and the prices the debit reserved at (the ones settle.lua reads back
 * off the call record, so the answer shows the figure the settle charges from, before the
 * remainder), and how that figure is written into an answer's `usage` object.
 */
import type { TokenCounts } from './usage'

/** A model's prices as the debit reserves at them: credits per 1,000,000 tokens (lua/debit.ts DebitMetering). */
export interface TokenPrices {
  input: number
  cachedInput: number
  output: number
  /** Cache writes, 5-minute and 1-hour lifetimes (Anthropic); absent: `input`, and a 1-hour one as a 5-minute one. */
  cacheWrite?: number
  cacheWrite1h?: number
}

/** input × p_in + cached × p_cached + output × p_out + the cache writes at theirs: settle.lua's cost. */
export function exactCostMicro(t: TokenCounts, p: TokenPrices): number {
  const write = p.cacheWrite ?? p.input
  return t.input * p.input + t.cached * p.cachedInput + t.output * p.output + (t.cache_write ?? 0) * write + (t.cache_write_1h ?? 0) * (p.cacheWrite1h ?? write)
}

export interface CostFields {
  /** USD: micro-credits / 1e6 / CREDITS_PER_USD. */
  cost: number
  /** The exact credits, 6 places. */
  cost_details: { credits: string }
}

/** The members §7 adds to a usage object, for `micro` micro-credits. */
export function costFields(micro: number, creditsPerUsd: number): CostFields {
  return { cost: micro / 1e6 / creditsPerUsd, cost_details: { credits: creditsText(micro) } }
}

/** The same members as JSON text, to splice into the provider's usage object (no leading comma). */
export function costMembers(micro: number, creditsPerUsd: number): string {
  return `"cost":${JSON.stringify(micro / 1e6 / creditsPerUsd)},"cost_details":{"credits":"${creditsText(micro)}"}`
}

/** Micro-credits as credits with 6 places, exact at any size (a double past 2^53 is still an integer). */
function creditsText(micro: number): string {
  const r = Math.max(0, Math.round(micro))
  // The common case without BigInt (a third of the splice's cost in the bench profile).
  if (Number.isSafeInteger(r)) return `${Math.floor(r / 1_000_000)}.${String(r % 1_000_000).padStart(6, '0')}`
  const m = BigInt(r)
  return `${m / 1_000_000n}.${(m % 1_000_000n).toString().padStart(6, '0')}`
}

/** Writes a call's cost into the usage objects a meter passes on: the members for the counts read. */
export type CostWriter = (t: TokenCounts) => string

/**
 * `feePct`: on the owner's lane the call costs the route's fee percent of the token cost (settle.lua
 * charges from cost × pct / 100, docs/api.md §12); absent on the house lane.
 */
export const costWriter =
  (p: TokenPrices, creditsPerUsd: number, feePct?: number): CostWriter =>
  (t) =>
    costMembers(feePct === undefined ? exactCostMicro(t, p) : (exactCostMicro(t, p) * feePct) / 100, creditsPerUsd)
