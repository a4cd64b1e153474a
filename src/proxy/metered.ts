/**
 * The metered side of a proxied request (CONTRACT §7), before and after its debit: the body read
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
import type { CallOutcome } from '../ledger/paid-call/outcome'
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
 * ownership of the objects it names: proxy/house-objects.ts), so that it is parsed once.
 */
export async function readMeteredProxyRequest(
  request: Request,
  m: Metering,
  maxBodyBytes: number,
  checkBody?: (body: Record<string, unknown>, kind: Metering['kind'], raw: string) => Promise<void>,
): Promise<MeteredProxyRequest> {
  if (m.spec.dialect === 'anthropic' && LONG_CONTEXT_BETA.test(request.headers.get('anthropic-beta') ?? ''))
    throw new ApiError('BAD_REQUEST', { field: 'anthropic-beta', expected: 'no context-1m beta (a metered route holds the standard prices, not the long-context ones)' })
  const raw = await readText(request, maxBodyBytes)
  const body = parseMeteredBody(raw)
  if (checkBody) await checkBody(body, m.kind, raw)
  return { raw, req: readMeteredRequest(raw, m.spec, m.kind, body) }
}

export function debitMetering(r: MeteredRequest): DebitMetering {
  return {
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

/** What goes upstream once the debit answered, and the meter that reads the answer's usage. */
export function meteredForward(m: MeteredProxyRequest, clampTo: number | null): { body: string; meter: UsageMeter } {
  const injectUsage = needsUsageChunk(m.req)
  return { body: forwardedBody(m.raw, m.req, { clampTo, injectUsage }), meter: meterFor(m.req.kind, m.req.stream, injectUsage) }
}

const NO_TOKENS = { input: 0, cached: 0, output: 0 }

/**
 * The usage a charged ending is settled with: the provider's when it arrived; for a 4xx without
 * one, none (the provider bills no rejected request); else an estimate from the bytes seen.
 */
export function usageAtEnd(m: MeteredProxyRequest, meter: UsageMeter, outcome: CallOutcome, upstreamBytes: number): MeteredUsage {
  const tokens = meter.usage()
  if (tokens) return { tokens, source: 'provider' }
  if (outcome === 'provider_4xx') return { tokens: NO_TOKENS, source: 'provider' }
  return estimatedUsage(m.req.inputBound, upstreamBytes, meter.inputSoFar())
}
