/**
 * Anthropic's usage report (an admin key in `x-api-key`, `anthropic-version`): GET
 * /v1/organizations/usage_report/messages, bucket_width=1d, group_by[]=model. A result splits the
 * input into `uncached_input_tokens`, `cache_read_input_tokens` and the cache writes
 * (`cache_creation.ephemeral_5m_input_tokens` / `ephemeral_1h_input_tokens`); the writes are input
 * here, as on our side (src/provider-bill/tokens.ts).
 */
import { addTo, type BillTokens } from './tokens'
import { asObject, eachPage, modelOf, resultsOf, tokenField, type BilledProvider, type UtcDay } from './usage-api'

export const ANTHROPIC_VERSION = '2023-06-01'

export async function anthropicUsage(p: BilledProvider, day: UtcDay): Promise<Map<string, BillTokens>> {
  const sums = new Map<string, BillTokens>()
  const url = new URL(`${p.baseUrl}/v1/organizations/usage_report/messages`)
  const start = new Date(day.startS * 1000).toISOString()
  url.searchParams.set('starting_at', start)
  url.searchParams.set('ending_at', new Date(day.endS * 1000).toISOString())
  url.searchParams.set('bucket_width', '1d')
  url.searchParams.append('group_by[]', 'model')
  const inDay = (b: Record<string, unknown>) => typeof b.starting_at === 'string' && Date.parse(b.starting_at) === day.startS * 1000
  await eachPage(url, { 'x-api-key': p.adminKey, 'anthropic-version': ANTHROPIC_VERSION }, (buckets) => {
    for (const r of resultsOf(buckets, inDay)) {
      // The report nests the writes by lifetime; a flat spelling of the same two counts is read too.
      const creation = asObject(r.cache_creation)
      const writes = creation
        ? tokenField(creation, 'ephemeral_5m_input_tokens') + tokenField(creation, 'ephemeral_1h_input_tokens')
        : tokenField(r, 'cache_creation_5m_input_tokens') + tokenField(r, 'cache_creation_1h_input_tokens')
      addTo(sums, modelOf(r), {
        input: tokenField(r, 'uncached_input_tokens') + writes,
        cached: tokenField(r, 'cache_read_input_tokens'),
        output: tokenField(r, 'output_tokens'),
      })
    }
  })
  return sums
}
