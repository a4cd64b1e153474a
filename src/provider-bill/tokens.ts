/**
 * Token counts as the reconciliation compares them (docs/api.md §13d): `input` is every input token
 * not read from the provider's cache (cache writes included: both providers bill them as input),
 * `cached` the cache reads, `output` the output. Both sides are brought to this one meaning.
 */
export interface BillTokens {
  input: number
  cached: number
  output: number
}

export const KINDS = ['input', 'cached', 'output'] as const

export const noTokens = (): BillTokens => ({ input: 0, cached: 0, output: 0 })

/** Adds `t` into the model's sums of `into`. */
export function addTo(into: Map<string, BillTokens>, model: string, t: BillTokens): void {
  const sum = into.get(model) ?? noTokens()
  for (const k of KINDS) sum[k] += t[k]
  into.set(model, sum)
}
