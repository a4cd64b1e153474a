/**
 * OpenAI's organisation usage API (an admin key, `Authorization: Bearer`): GET
 * /v1/organization/usage/completions and /usage/embeddings, bucket_width=1d, group_by=model. A
 * completions result's `input_tokens` includes `input_cached_tokens`; ours count cached apart
 * (src/metering/usage.ts), so the cached ones are taken out of input here.
 */
import { addTo, type BillTokens } from './tokens'
import { eachPage, modelOf, resultsOf, tokenField, UsageUnavailable, type BilledProvider, type UtcDay } from './usage-api'

export async function openaiUsage(p: BilledProvider, day: UtcDay): Promise<Map<string, BillTokens>> {
  const sums = new Map<string, BillTokens>()
  const headers = { authorization: `Bearer ${p.adminKey}` }
  const inDay = (b: Record<string, unknown>) => b.start_time === day.startS
  for (const kind of ['completions', 'embeddings'] as const) {
    const url = new URL(`${p.baseUrl}/v1/organization/usage/${kind}`)
    url.searchParams.set('start_time', String(day.startS))
    url.searchParams.set('end_time', String(day.endS))
    url.searchParams.set('bucket_width', '1d')
    url.searchParams.append('group_by', 'model')
    await eachPage(url, headers, (buckets) => {
      for (const r of resultsOf(buckets, inDay)) {
        const input = tokenField(r, 'input_tokens')
        const cached = tokenField(r, 'input_cached_tokens')
        if (cached > input) throw new UsageUnavailable('input_cached_tokens above input_tokens')
        addTo(sums, modelOf(r), { input: input - cached, cached, output: tokenField(r, 'output_tokens') })
      }
    })
  }
  return sums
}
