/**
 * Token usage as the providers report it (CONTRACT §7), read from a plain JSON answer or from the
 * events of a stream, per API: OpenAI chat completions, Responses, embeddings; Anthropic messages.
 * Cached tokens are counted apart from input, never in both.
 */
export type Dialect = 'openai' | 'anthropic'
/** Which API a metered route speaks: where its ceiling is named and its usage reported. */
export type ApiKind = 'chat' | 'responses' | 'embeddings' | 'messages'

export interface TokenCounts {
  /** Input tokens not read from the provider's cache. */
  input: number
  cached: number
  output: number
}

export type UsageSource = 'provider' | 'estimated'

export interface MeteredUsage {
  tokens: TokenCounts
  source: UsageSource
}

export function apiKindOf(dialect: Dialect, path: string): ApiKind {
  if (dialect === 'anthropic') return 'messages'
  if (path.endsWith('/responses')) return 'responses'
  if (path.endsWith('/embeddings')) return 'embeddings'
  return 'chat'
}

const count = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0)
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
 * Anthropic's usage: `input_tokens` excludes cache reads and writes; a cache write is billed as
 * input here (Anthropic bills it at 1.25×: see docs/metering.md).
 */
export function anthropicUsage(usage: unknown): TokenCounts | null {
  const u = obj(usage)
  if (!u) return null
  return { input: count(u.input_tokens) + count(u.cache_creation_input_tokens), cached: count(u.cache_read_input_tokens), output: count(u.output_tokens) }
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
export function estimatedUsage(inputBound: number, relayedBytes: number, input: Pick<TokenCounts, 'input' | 'cached'> | null = null): MeteredUsage {
  return { tokens: { input: input?.input ?? inputBound, cached: input?.cached ?? 0, output: Math.ceil(relayedBytes / 4) }, source: 'estimated' }
}
