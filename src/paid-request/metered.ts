/**
 * The metered side of a proxied request (docs/api.md §7), before and after its debit: the body read
 * (bounded by MAX_BODY_BYTES; a flat route streams it instead) to find the model and the ceiling,
 * the debit's metering arguments, the body forwarded (the clamp written in, the usage chunk asked
 * for), and the usage a settle is charged for by how the relay ended.
 * errors: BAD_REQUEST (body too large → 413, not JSON, an unpriced model, a bad ceiling, Anthropic's
 *         long-context beta).
 */
import type { Metering } from '../catalog/catalog'
import { ApiError } from '../errors'
import { readText } from '../edge/body'
import type { DebitMetering } from '../lua/debit'
import { usageAtSettle, type CallOutcome } from './outcome'
import { costWriter } from '../metering/cost'
import { meterFor, type UsageMeter } from '../metering/meter'
import { cacheWrite1hPrice, cacheWritePrice, forwardedBody, inputBoundPrice, needsUsageChunk, parseMeteredBody, readMeteredRequest, type MeteredRequest } from '../metering/request'
import { estimatedUsage, type MeteredUsage } from '../metering/usage'

export interface MeteredProxyRequest {
  raw: string
  req: MeteredRequest
}

/**
 * Anthropic's 1M-token context window (a beta the client turns on by header) bills a prompt past
 * 200k tokens at a long-context rate, about twice the input and 1.5 times the output price, which
 * the catalog does not hold: charged at the standard prices, the house would pay the difference.
 */
const LONG_CONTEXT_BETA = /(^|,)\s*context-1m/i

/**
 * `checkBody`: a decision on the parsed body taken before the metering reads it (the house lane's
 * ownership of the objects it names: proxy/house-objects.ts), so that it is parsed once; it
 * answers the input tokens a chained `previous_response_id` carries, which the input bound adds.
 */
export async function readMeteredProxyRequest(
  request: Request,
  m: Metering,
  maxBodyBytes: number,
  checkBody?: (body: Record<string, unknown>, kind: Metering['kind'], raw: string) => Promise<number>,
): Promise<MeteredProxyRequest> {
  if (m.spec.dialect === 'anthropic' && LONG_CONTEXT_BETA.test(request.headers.get('anthropic-beta') ?? ''))
    throw new ApiError('BAD_REQUEST', { field: 'anthropic-beta', expected: 'no context-1m beta (a metered route holds the standard prices, not the long-context ones)' })
  const raw = await readText(request, maxBodyBytes)
  const body = parseMeteredBody(raw)
  // A chained response's input is held by the provider: what the account's record of it says it carries.
  const held = checkBody ? await checkBody(body, m.kind, raw) : 0
  return { raw, req: readMeteredRequest(raw, m.spec, m.kind, body, held) }
}

/** `feePct`: the owner's lane's percent of the cost (docs/api.md §12); absent on the house lane. */
export function debitMetering(r: MeteredRequest, feePct?: number): DebitMetering {
  return {
    ...(feePct === undefined ? {} : { feePct }),
    model: r.model,
    inputBound: r.inputBound,
    input: r.price.input,
    cachedInput: r.price.cached_input ?? r.price.input,
    boundInput: inputBoundPrice(r.kind, r.price),
    cacheWrite: cacheWritePrice(r.price),
    cacheWrite1h: cacheWrite1hPrice(r.price),
    output: r.price.output,
    ceiling: r.ceiling,
    maxOutput: r.price.max_output,
    minOutput: r.minOutput,
  }
}

/**
 * What goes upstream once the debit answered, and the meter that reads the answer's usage and
 * writes the call's cost into each usage object the client gets (docs/api.md §7), at the prices
 * the debit reserved at and, on the owner's lane, the route's fee percent of it: the settle's.
 * `lane.endUser`: the house lane's end-user id, written into the body (docs/api.md §12); null on
 * the owner's lane, whose `feePct` prices it.
 */
export function meteredForward(
  m: MeteredProxyRequest,
  clampTo: number | null,
  creditsPerUsd: number,
  lane: { endUser: string | null; feePct?: number },
): { body: string; meter: UsageMeter } {
  const injectUsage = needsUsageChunk(m.req)
  const costs = costWriter(debitMetering(m.req), creditsPerUsd, lane.feePct)
  return { body: forwardedBody(m.raw, m.req, { clampTo, injectUsage, endUser: lane.endUser }), meter: meterFor(m.req.kind, m.req.stream, injectUsage, costs) }
}

/** The usage a charged ending is settled with (usageAtSettle): the estimate is from the bytes seen. */
export function usageAtEnd(m: MeteredProxyRequest, meter: UsageMeter, outcome: CallOutcome, upstreamBytes: number): MeteredUsage {
  return usageAtSettle(outcome, meter.usage(), () => estimatedUsage(m.req.inputBound, upstreamBytes, meter.inputSoFar()))
}
