/**
 * A metered request as the proxy and the paid call read it before the debit (docs/api.md §7): the
 * model and its prices, the output ceiling it names, whether it streams, and a bound on its input
 * tokens. And the body forwarded once the debit has answered: the ceiling the debit clamped to
 * written in, and for an OpenAI chat stream the usage chunk asked for.
 * errors: BAD_REQUEST (body, model, the ceiling field — not a positive integer, or past the model's max_output —, `n` past 1, a file, document or audio part,
 *         audio output, a server-side tool, a priority service tier, a predicted output, input the provider holds:
 *         an earlier response, a conversation, a stored prompt or item, a background response).
 */
import { ApiError } from '../errors'
import type { MeteredSpec, ModelPrice } from '../catalog/schema'
import { parsesTo, topLevelValueSpan } from '../json-members'
import { IMAGE_TOKENS_BOUND, mediaParts, toolsBound, type MediaParts } from './media'
import type { ApiKind } from './usage'

/** Where the priced models are shown (the refusal of an unpriced one points there). */
export const PRICES_SHOWN_AT = '/llms-full.txt and GET /v1/search'

export interface MeteredRequest {
  kind: ApiKind
  model: string
  price: ModelPrice
  /** The output ceiling the request names (0 for embeddings, which produce none), or null. */
  ceiling: number | null
  /** The field a clamp writes the ceiling into. */
  ceilingField: string | null
  stream: boolean
  /**
   * Never below the true input token count: the body's UTF-8 byte length (a token is at least
   * one byte of the text it encodes, and the JSON around the text only adds bytes), plus
   * the model's image bound per image part (`image_tokens`, else IMAGE_TOKENS_BOUND), whose tokens its bytes do not bound, and TOOLS_PROMPT_BOUND
   * when tools are present, for the prompt the provider adds for them (media.ts).
   */
  inputBound: number
  minOutput: number
  body: Record<string, unknown>
}

/** The most input tokens one image part costs on the model. */
export const imageBound = (price: ModelPrice): number => price.image_tokens ?? IMAGE_TOKENS_BOUND

/** What a token written to the prompt cache costs (5-minute lifetime), per 1,000,000; absent: as input. */
export const cacheWritePrice = (price: ModelPrice): number => price.cache_write ?? price.input
/** What a token written to the prompt cache with the 1-hour lifetime costs; absent: as a 5-minute write. */
export const cacheWrite1hPrice = (price: ModelPrice): number => price.cache_write_1h ?? cacheWritePrice(price)

/**
 * The price the reservation weighs each input token at: the input price, or for Anthropic, whose
 * input tokens may each be written to the cache at a higher one, the highest of the three. Any
 * token of the prompt may be a cache write, and the bound must hold whatever the request asks.
 */
export function inputBoundPrice(kind: ApiKind, price: ModelPrice): number {
  return kind === 'messages' ? Math.max(price.input, cacheWritePrice(price), cacheWrite1hPrice(price)) : price.input
}

/** The request fields that name the output ceiling, per API; a clamp writes the first. */
const CEILING_FIELDS: Record<ApiKind, string[]> = {
  chat: ['max_completion_tokens', 'max_tokens'],
  responses: ['max_output_tokens'],
  messages: ['max_tokens'],
  embeddings: [],
}

/** A metered request's body, parsed once: the proxy's ownership check reads it too (proxy/house-objects.ts). */
export function parseMeteredBody(raw: string): Record<string, unknown> {
  let body: unknown
  try {
    body = JSON.parse(raw)
  } catch {
    body = null
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new ApiError('BAD_REQUEST', { field: 'body', expected: 'a JSON object (a metered route reads its model and output ceiling)' })
  return body as Record<string, unknown>
}

/**
 * `heldInput`: the tokens of a `previous_response_id` the account owns, from its record
 * (proxy/house-objects.ts); only then may a Responses request chain, its input bound grown by them.
 */
export function readMeteredRequest(raw: string, spec: MeteredSpec, kind: ApiKind, parsed?: Record<string, unknown>, heldInput = 0): MeteredRequest {
  const b = parsed ?? parseMeteredBody(raw)
  const model = typeof b.model === 'string' ? b.model : ''
  const price = Object.hasOwn(spec.models, model) ? spec.models[model] : undefined
  if (!price) throw new ApiError('BAD_REQUEST', { field: 'model', expected: `a model this route prices (listed at ${PRICES_SHOWN_AT})` })
  const media = refuseUnbounded(b, kind, heldInput > 0)
  const tools = kind === 'embeddings' ? 0 : toolsBound(b)
  let ceiling: number | null = kind === 'embeddings' ? 0 : null
  // Chat has two names for the ceiling; a request that sets both is reserved for the larger, since
  // which one the provider obeys is not ours to guess.
  for (const f of CEILING_FIELDS[kind]) {
    const v = b[f]
    if (v === undefined || v === null) continue
    if (!Number.isSafeInteger(v) || (v as number) < 1) throw new ApiError('BAD_REQUEST', { field: f, expected: 'a positive integer' })
    // Past the model's limit the provider refuses it anyway; reserved, it held credits a concurrent call needed.
    if ((v as number) > price.max_output) throw new ApiError('BAD_REQUEST', { field: f, expected: `≤ ${price.max_output} (the model's max_output)` })
    ceiling = Math.max(ceiling ?? 0, v as number)
  }
  return {
    kind,
    model,
    price,
    ceiling,
    ceilingField: CEILING_FIELDS[kind][0] ?? null,
    stream: b.stream === true,
    inputBound: Buffer.byteLength(raw, 'utf8') + media.images * imageBound(price) + tools + heldInput,
    minOutput: spec.min_output,
    body: b,
  }
}

/**
 * Refuses what a metered request can cost that neither its bytes bound nor the catalog prices
 * (docs/metering.md, the reservation); answers the image parts, which the input bound weighs.
 */
function refuseUnbounded(b: Record<string, unknown>, kind: ApiKind, chainBounded: boolean): MediaParts {
  // The reservation bounds one completion's output: n of them could cost n times it.
  if (kind === 'chat' && b.n !== undefined && b.n !== null && b.n !== 1) throw new ApiError('BAD_REQUEST', { field: 'n', expected: '1 or absent (a metered route reserves one completion; send n requests)' })
  // Only where content lives: a tool's parameter schema may say `"type": "file"` (OpenAPI 2) and mean no file.
  const media = kind === 'embeddings' ? { images: 0, files: 0 } : mediaParts([b.messages, b.input, b.system])
  if (media.files > 0) throw new ApiError('BAD_REQUEST', { field: kind === 'responses' ? 'input' : 'messages', expected: 'no file, document, audio or stored-item parts (a metered route prices text and images only: send the text)' })
  // Audio output is billed at the model's audio rate, which the catalog does not price.
  if (kind === 'chat' && ((Array.isArray(b.modalities) && b.modalities.includes('audio')) || (b.audio !== undefined && b.audio !== null))) throw new ApiError('BAD_REQUEST', { field: 'modalities', expected: 'text output only (a metered route prices text and images only)' })
  // OpenAI's priority tier bills above the prices the catalog holds (the default and flex tiers do not).
  if (b.service_tier === 'priority' || b.service_tier === 'scale') throw new ApiError('BAD_REQUEST', { field: 'service_tier', expected: "'auto', 'default', 'flex' or absent (a metered route holds the standard prices)" })
  // A predicted output's rejected tokens are billed at the output rate, and OpenAI does not say the
  // ceiling bounds them; the prediction's bytes only weigh in the input bound, at the input rate.
  if (kind === 'chat' && b.prediction !== undefined && b.prediction !== null) throw new ApiError('BAD_REQUEST', { field: 'prediction', expected: 'absent (its rejected tokens are billed as output, and the ceiling a metered route reserves is not known to bound them)' })
  if (kind === 'responses') refuseStoredInput(b, chainBounded)
  // An assistant turn's `audio` names an earlier audio answer by id: audio input, at the audio rate.
  if (kind === 'chat' && Array.isArray(b.messages) && b.messages.some((m) => m && typeof m === 'object' && (m as Record<string, unknown>).audio != null))
    throw new ApiError('BAD_REQUEST', { field: 'messages', expected: 'no audio in the messages (a metered route prices text and images only)' })
  return media
}

/**
 * Input the provider holds and this request only names, so its bytes do not bound it (OpenAI bills
 * it all as input): the turns of an earlier response or of a conversation, a stored prompt. And a
 * background response, which answers before it is generated and carries no usage: the call would
 * settle on an estimate of a few bytes while the provider bills the whole generation later.
 */
function refuseStoredInput(b: Record<string, unknown>, chainBounded: boolean): void {
  for (const field of ['previous_response_id', 'conversation', 'prompt'])
    if (b[field] !== undefined && b[field] !== null && !(field === 'previous_response_id' && chainBounded))
      throw new ApiError('BAD_REQUEST', { field, expected: 'absent: send the whole input in the request (input the provider holds is billed, and nothing in the request bounds it)' })
  if (b.background === true) throw new ApiError('BAD_REQUEST', { field: 'background', expected: 'false or absent (a background response is billed after it answers, past its settle)' })
}

/** An OpenAI chat stream reports its usage only when asked; the client may have asked itself. */
export function needsUsageChunk(r: MeteredRequest): boolean {
  if (r.kind !== 'chat' || !r.stream) return false
  const opts = r.body.stream_options
  return !(opts && typeof opts === 'object' && (opts as Record<string, unknown>).include_usage === true)
}

/**
 * The end-user members a house-lane body carries (docs/api.md §12), replacing the client's: OpenAI's
 * `safety_identifier` (and `user`, its older name, when the client set it), `user` on embeddings
 * (its only field), Anthropic's `metadata.user_id` (the rest of `metadata` kept).
 */
function endUserMembers(r: MeteredRequest, id: string): [string, string][] {
  const value = JSON.stringify(id)
  if (r.kind === 'embeddings') return [['user', value]]
  if (r.kind === 'messages') {
    const meta = r.body.metadata
    const kept = meta && typeof meta === 'object' && !Array.isArray(meta) ? (meta as Record<string, unknown>) : {}
    return [['metadata', JSON.stringify({ ...kept, user_id: id })]]
  }
  return [['safety_identifier', value], ...(Object.hasOwn(r.body, 'user') ? [['user', value] as [string, string]] : [])]
}

/**
 * The body to forward: the raw one unless a clamped ceiling, the usage request or the house lane's
 * end-user id (`endUser`) must be written in.
 */
export function forwardedBody(raw: string, r: MeteredRequest, o: { clampTo: number | null; injectUsage: boolean; endUser?: string | null }): string {
  // Top-level members to set, each with its JSON text.
  const set: [string, string][] = []
  if (o.clampTo !== null && r.ceilingField !== null) set.push([r.ceilingField, String(o.clampTo)])
  if (o.injectUsage) set.push(['stream_options', JSON.stringify({ ...(r.body.stream_options as object | undefined), include_usage: true })])
  if (o.endUser) set.push(...endUserMembers(r, o.endUser))
  if (set.length === 0) return raw
  // Fields the body lacks are spliced in after its opening brace: no second serialisation of the
  // whole body (a JSON object's members have no order). A field it has is replaced by re-serialising.
  if (set.every(([k]) => !Object.hasOwn(r.body, k))) return withMembersAdded(raw, set.map(([k, v]) => `${JSON.stringify(k)}:${v}`))
  const b: Record<string, unknown> = { ...r.body }
  for (const [k, v] of set) b[k] = JSON.parse(v)
  // A field it has gets its value replaced in the text, the rest kept as the client wrote it (a
  // 64-bit seed serialised again would be rounded); kept only if it parses to the intended body.
  let text: string | null = raw
  for (const [k, v] of set) if (text !== null) text = withValue(text, k, v)
  return text !== null && parsesTo(text, b) ? text : JSON.stringify(b)
}

/** The object's text with its top-level `key` set to `value` (replaced, or added after the brace). */
function withValue(t: string, key: string, value: string): string | null {
  const span = topLevelValueSpan(t, key)
  if (span) return t.slice(0, span[0]) + value + t.slice(span[1])
  return t.includes('{') ? withMembersAdded(t, [`${JSON.stringify(key)}:${value}`]) : null
}

/** Members spliced in after the object's opening brace (a JSON object's members have no order). */
function withMembersAdded(t: string, members: string[]): string {
  const at = t.indexOf('{') + 1
  const empty = t.slice(at).trimStart().startsWith('}')
  return t.slice(0, at) + members.join(',') + (empty ? '' : ',') + t.slice(at)
}
