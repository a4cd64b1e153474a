/**
 * How a paid request ended, and the one table that says who pays for each ending. Both the paid
 * call and the proxy settle through it, so a rule changed here changes for both; a rule written at a
 * call site drifted once already (a 3xx charged on one path, refunded on the other).
 */
import type { MeteredUsage, TokenCounts } from '../metering/usage'
import type { ProviderOutcome } from '../upstream/request'

/**
 * charged: the provider did the work, or the caller chose to stop it.
 * refunded: the provider failed, or the request never properly reached it.
 */
export const SETTLEMENT = {
  /** A 2xx, or a 3xx without Location (304): the provider answered. */
  ok: 'charged',
  /** A 4xx is the caller's request at fault; passed through. */
  provider_4xx: 'charged',
  /** The client went away mid-request: the provider had started the work. */
  client_closed: 'charged',
  /**
   * The client went away before its request left for the provider (the paid call checks just
   * before it sends): nothing was bought, so nothing is kept — unlike client_closed.
   */
  not_sent: 'refunded',
  /** A 5xx, a body cut mid-stream, or an unexpected failure reading it. */
  provider_error: 'refunded',
  /**
   * A metered answer the provider cut after output had reached the client: the tokens were spent,
   * so they are charged — the provider's usage if it came, else an estimate (docs/api.md §7).
   */
  provider_cut: 'charged',
  /** No connection, or it broke before the provider answered. */
  network: 'refunded',
  timeout: 'refunded',
  /** The answer passed the response cap. */
  too_large: 'refunded',
  /** A Content-Encoding we cannot undo, or a body that does not decode. */
  bad_encoding: 'refunded',
  /** A 3xx with Location: we never follow redirects, so the provider gave no answer. */
  redirect: 'refunded',
  /** No provider key past the debit (none vaulted, unreadable, the vault not answering). */
  no_key: 'refunded',
  /** A streamed proxy body passed MAX_BODY_BYTES: the request was refused, not served. */
  request_too_large: 'refunded',
  /** Never settled by its request (a crash cut it off): refunded by the sweeper. */
  abandoned: 'refunded',
} as const satisfies Record<string, 'charged' | 'refunded'>

export type CallOutcome = keyof typeof SETTLEMENT

// Every ending a provider request reports is settled by this table.
const _everyProviderOutcome: Record<ProviderOutcome, 'charged' | 'refunded'> = SETTLEMENT
void _everyProviderOutcome

export const CALL_OUTCOMES = Object.keys(SETTLEMENT) as CallOutcome[]

export function isRefunded(outcome: CallOutcome): boolean {
  return SETTLEMENT[outcome] === 'refunded'
}


const NO_TOKENS = { input: 0, cached: 0, output: 0 }

/**
 * The usage a metered call is settled with, the same on both paths: the provider's when its answer
 * carried it; for a 4xx without one, none (the provider bills no rejected request); else the
 * estimate (never above the reservation).
 */
export function usageAtSettle(outcome: CallOutcome, provider: TokenCounts | null, estimate: () => MeteredUsage): MeteredUsage {
  if (provider) return { tokens: provider, source: 'provider' }
  if (outcome === 'provider_4xx') return { tokens: NO_TOKENS, source: 'provider' }
  return estimate()
}
