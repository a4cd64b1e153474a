/**
 * Token usage as the providers report it (docs/api.md §7), read from a plain JSON answer or from the
 * events of a stream, per API: OpenAI chat completions, Responses, embeddings; Anthropic messages.
 * Cached tokens are counted apart from input, never in both.
 */
import type { ApiKind } from '../catalog/api-kind'

export type { ApiKind, Dialect } from '../catalog/api-kind'

export interface TokenCounts {
  /** Input tokens neither read from nor written to the provider's cache. */
  input: number
  cached: number
  output: number
  /**
   * Input tokens written to the provider's prompt cache (Anthropic), apart from `input`: with the
   * 5-minute lifetime, and with the 1-hour one. Absent when none (every OpenAI call).
   */
  cache_write?: number
  cache_write_1h?: number
}

export type UsageSource = 'provider' | 'estimated'

export interface MeteredUsage {
  tokens: TokenCounts
  source: UsageSource
}

/**
 * The most tokens one count of one call is taken at: a billion, hundreds of times the largest
 * context window sold. A provider's report past it is not a bill but a fault (or a hostile
 * upstream): taken as sent, 2^60 tokens overflowed settle.lua's integer formatting (a negative
 * `uncharged`) and the ledger's 32-bit token columns (the call's row and debit dead-lettered).
 * The charge is the reservation either way; the counts stay exact integers every store can hold.
 */
export const MAX_TOKENS = 1_000_000_000
const count = (v: unknown): number => (typeof v === 'number' && v > 0 ? Math.min(Math.floor(v), MAX_TOKENS) : 0)
const obj = (v: unknown): Record<string, unknown> | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null)

/** The usage object of an OpenAI chat / embeddings / Responses answer, or null when it has none. */
export function openaiUsage(kind: ApiKind, usage: unknown): TokenCounts | null {
  const u = obj(usage)
  if (!u) return null
  if (kind === 'responses') {
    const cached = count(obj(u.input_tokens_details)?.cached_tokens)
    return { input: Math.max(0, count(u.input_tokens) - cached), cached, output: count(u.output_tokens) }
  }
  const cached = count(obj(u.prompt_tokens_details)?.cached_tokens)
  return { input: Math.max(0, count(u.prompt_tokens) - cached), cached, output: count(u.completion_tokens) }
}

/**
 * Anthropic's usage: `input_tokens` excludes cache reads and writes. The writes are
 * `cache_creation_input_tokens`, split by lifetime in `cache_creation` (priced apart: 1.25× and
 * 2× the input price); without the split they are all 5-minute writes. A split that adds up to
 * more than the total is believed over it (never fewer tokens than reported).
 */
export function anthropicUsage(usage: unknown): TokenCounts | null {
  const u = obj(usage)
  if (!u) return null
  const split = obj(u.cache_creation)
  const hour = count(split?.ephemeral_1h_input_tokens)
  const written = Math.max(count(u.cache_creation_input_tokens), hour + count(split?.ephemeral_5m_input_tokens))
  return withCacheWrites({ input: count(u.input_tokens), cached: count(u.cache_read_input_tokens), output: count(u.output_tokens) }, written - hour, hour)
}

/** The counts with the cache writes that happened (none: no fields, as for every OpenAI call). */
export function withCacheWrites(t: TokenCounts, fiveMinutes: number, oneHour: number): TokenCounts {
  if (fiveMinutes > 0) t.cache_write = fiveMinutes
  if (oneHour > 0) t.cache_write_1h = oneHour
  return t
}

/** The usage of a whole (non-streamed) JSON answer. */
export function usageOfAnswer(kind: ApiKind, answer: unknown): TokenCounts | null {
  const a = obj(answer)
  if (!a) return null
  return kind === 'messages' ? anthropicUsage(a.usage) : openaiUsage(kind, a.usage)
}

/**
 * What a call whose usage never arrived is charged: its input as the provider reported it before
 * the break (Anthropic's message_start), else the input bound as reserved; ~4 bytes a token out.
 */
export function estimatedUsage(inputBound: number, relayedBytes: number, input: Omit<TokenCounts, 'output'> | null = null): MeteredUsage {
  const output = Math.ceil(relayedBytes / 4)
  if (!input) return { tokens: { input: Math.min(inputBound, MAX_TOKENS), cached: 0, output }, source: 'estimated' }
  return { tokens: withCacheWrites({ input: input.input, cached: input.cached, output }, input.cache_write ?? 0, input.cache_write_1h ?? 0), source: 'estimated' }
}
