/**
 * The providers' usage APIs on the loopback fake upstream (plug `usage.handle` in front of another
 * handler), in the shapes of the providers' references:
 *   GET /v1/organization/usage/completions and /embeddings (OpenAI; `Authorization: Bearer <admin key>`):
 *     {object: "page", data: [{object: "bucket", start_time, end_time, results: [{object:
 *     "organization.usage.completions.result", input_tokens (cached included), input_cached_tokens,
 *     output_tokens, num_model_requests, model, project_id, user_id, api_key_id, batch}]}],
 *     has_more, next_page}; query start_time, end_time, bucket_width=1d, group_by=model, page.
 *   GET /v1/organizations/usage_report/messages (Anthropic; `x-api-key`, `anthropic-version`):
 *     {data: [{starting_at, ending_at, results: [{uncached_input_tokens, cache_read_input_tokens,
 *     cache_creation: {ephemeral_5m_input_tokens, ephemeral_1h_input_tokens}, output_tokens, model,
 *     service_tier, workspace_id, api_key_id, context_window, server_tool_use}]}], has_more,
 *     next_page}; query starting_at, ending_at, bucket_width=1d, group_by[]=model, page.
 * One result per page, so every answer of more than one model is paginated. `down` makes every
 * usage request answer that status (503, 429, …) until it is set back to null.
 * `usage` is keyed by provider, then UTC day, then model, in our meaning (input = uncached input
 * plus cache writes; cached = cache reads: src/provider-bill/tokens.ts).
 */
import type { Seen } from './upstream'

export interface FakeTokens {
  input: number
  cached: number
  output: number
}

export interface UsageApiFake {
  usage: Record<'openai' | 'anthropic', Record<string, Record<string, FakeTokens>>>
  down: number | null
  /** Every usage request, in order. */
  requests: Seen[]
  adminKeys: { openai: string; anthropic: string }
  /** The answer to a usage API path, or null for any other path. */
  handle(req: Request, seen: Seen): Response | null
}

const DAY_S = 86_400
const dayOf = (s: number) => new Date(s * 1000).toISOString().slice(0, 10)

export function createUsageApiFake(adminKeys = { openai: 'sk-admin-openai-test', anthropic: 'sk-ant-admin-test' }): UsageApiFake {
  const fake: UsageApiFake = {
    usage: { openai: {}, anthropic: {} },
    down: null,
    requests: [],
    adminKeys,
    handle(req, seen) {
      const url = new URL(req.url)
      const openai = url.pathname === '/v1/organization/usage/completions' || url.pathname === '/v1/organization/usage/embeddings'
      const anthropic = url.pathname === '/v1/organizations/usage_report/messages'
      if (!openai && !anthropic) return null
      fake.requests.push(seen)
      if (fake.down !== null) return Response.json({ error: { message: 'usage API unavailable' } }, { status: fake.down })
      if (openai) {
        if (seen.headers.authorization !== `Bearer ${fake.adminKeys.openai}`) return Response.json({ error: { message: 'invalid admin key' } }, { status: 401 })
        return openaiPage(url, url.pathname.endsWith('/embeddings') ? 'embeddings' : 'completions', fake.usage.openai)
      }
      if (seen.headers['x-api-key'] !== fake.adminKeys.anthropic || !seen.headers['anthropic-version']) return Response.json({ type: 'error', error: { type: 'authentication_error' } }, { status: 401 })
      return anthropicPage(url, fake.usage.anthropic)
    },
  }
  return fake
}

/** Results of every day in [start, end), one page each: the page token is the result's index. */
function paged<T>(all: T[], page: string | null) {
  const i = page === null ? 0 : Number(Buffer.from(page, 'base64').toString())
  return { item: all[i] ?? null, has_more: i + 1 < all.length, next_page: i + 1 < all.length ? Buffer.from(String(i + 1)).toString('base64') : null }
}

function openaiPage(url: URL, kind: 'completions' | 'embeddings', usage: Record<string, Record<string, FakeTokens>>): Response {
  const start = Number(url.searchParams.get('start_time'))
  const end = Number(url.searchParams.get('end_time') ?? start + DAY_S)
  if (url.searchParams.get('bucket_width') !== '1d' || !url.searchParams.getAll('group_by').includes('model'))
    return Response.json({ error: { message: 'expected bucket_width=1d and group_by=model' } }, { status: 400 })
  const all: { start: number; result: Record<string, unknown> }[] = []
  for (let s = start; s < end; s += DAY_S)
    for (const [model, t] of Object.entries(usage[dayOf(s)] ?? {})) {
      // Embedding models come from the embeddings endpoint only (they have no cached or output tokens).
      if ((kind === 'embeddings') !== model.startsWith('embed')) continue
      all.push({
        start: s,
        result:
          kind === 'completions'
            ? { object: 'organization.usage.completions.result', input_tokens: t.input + t.cached, input_cached_tokens: t.cached, output_tokens: t.output, input_audio_tokens: 0, output_audio_tokens: 0, num_model_requests: 1, project_id: null, user_id: null, api_key_id: null, model, batch: null }
            : { object: 'organization.usage.embeddings.result', input_tokens: t.input, num_model_requests: 1, project_id: null, user_id: null, api_key_id: null, model },
      })
    }
  const p = paged(all, url.searchParams.get('page'))
  const data = p.item ? [{ object: 'bucket', start_time: p.item.start, end_time: p.item.start + DAY_S, results: [p.item.result] }] : []
  return Response.json({ object: 'page', data, has_more: p.has_more, next_page: p.next_page })
}

function anthropicPage(url: URL, usage: Record<string, Record<string, FakeTokens>>): Response {
  const start = Date.parse(url.searchParams.get('starting_at') ?? '') / 1000
  const end = url.searchParams.get('ending_at') ? Date.parse(url.searchParams.get('ending_at')!) / 1000 : start + DAY_S
  if (!Number.isFinite(start) || url.searchParams.get('bucket_width') !== '1d' || !url.searchParams.getAll('group_by[]').includes('model'))
    return Response.json({ type: 'error', error: { type: 'invalid_request_error' } }, { status: 400 })
  const all: { start: number; result: Record<string, unknown> }[] = []
  for (let s = start; s < end; s += DAY_S)
    for (const [model, t] of Object.entries(usage[dayOf(s)] ?? {}))
      all.push({
        start: s,
        // The cache writes are reported apart; the fake puts a tenth of our input there when it can.
        result: {
          uncached_input_tokens: t.input - Math.floor(t.input / 10),
          cache_read_input_tokens: t.cached,
          cache_creation: { ephemeral_5m_input_tokens: Math.floor(t.input / 10), ephemeral_1h_input_tokens: 0 },
          output_tokens: t.output,
          server_tool_use: { web_search_requests: 0 },
          model,
          service_tier: 'standard',
          workspace_id: null,
          api_key_id: null,
          context_window: '0-200k',
        },
      })
  const p = paged(all, url.searchParams.get('page'))
  const iso = (s: number) => new Date(s * 1000).toISOString().replace('.000Z', 'Z')
  const data = p.item ? [{ starting_at: iso(p.item.start), ending_at: iso(p.item.start + DAY_S), results: [p.item.result] }] : []
  return Response.json({ data, has_more: p.has_more, next_page: p.next_page })
}
