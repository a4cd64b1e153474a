/**
 * A proxied request past its front door (proxy/service.ts: the token, the lane, the house lane's
 * checks, a metered body read): open the paid request (debit.lua, with a lease, since a stream has no
 * natural end) → the provider key (looked up before the debit on a metered or house route; else read
 * only now, none: the call settles as no_key) → the provider (upstream/request.ts, the one provider
 * request), both bodies streamed → the answer relayed (relay.ts, metered-relay.ts) → settle once, by
 * the outcome table the paid call shares (outcome.ts).
 * errors: every denial of debit.lua, PAYMENT_REQUIRED, VAULT_KEY_MISSING, VAULT_UNAVAILABLE,
 *         KEY_UNREADABLE, API_UNAVAILABLE (these four refunded), PROVIDER_ERROR (refunded),
 *         RESPONSE_TOO_LARGE (refunded).
 */
import type { Principal } from '../auth/principal'
import type { Provider } from '../catalog/catalog'
import { bodyTooLarge, limitedStream } from '../edge/body'
import { recordingAnswerId } from '../metering/answer-id'
import { endUserId } from '../metering/end-user'
import { concat, type UsageMeter } from '../metering/meter'
import type { TokenCounts } from '../metering/usage'
import type { Metrics } from '../metrics'
import { downstreamHeaders, isScopeHeader } from '../upstream/headers'
import { clientGone, requestProvider } from '../upstream/request'
import { KeyScrubber } from '../upstream/scrub'
import type { LaneKey, ProviderKeys } from '../vault/provider-key'
import type { CallLane } from './calls'
import type { DebitedCall, SettleFacts } from './debited-call'
import { debitMetering, meteredForward, usageAtEnd, type MeteredProxyRequest } from './metered'
import { meteredRelay } from './metered-relay'
import { openPaidCall, type PaidCallDeps } from './open'
import type { CallOutcome } from './outcome'
import { providerFailure } from './provider-failure'
import { afterFirst } from './read-ahead'
import { relay, type RelayEnd } from './relay'
import type { RunBudget } from './run-header'

/** How long a metered answer is still read after its client left, for the usage the provider bills. */
export const METERED_DRAIN_MS = 120_000
/** The bound in force (tests shorten it). */
export const meteredDrain = { ms: METERED_DRAIN_MS }

export interface ProxiedDeps extends PaidCallDeps {
  metrics: Pick<Metrics, 'proxyBytes'>
  /** The key of the house lane's end-user ids (metering/end-user.ts). */
  endUserSecret: string
}

/** The provider and the path (with its query) a proxied request goes to, found safe (proxy/path.ts). */
export interface ProxiedTarget {
  provider: Provider & { proxy: NonNullable<Provider['proxy']> }
  path: string
  query: string
}

/** What the front door decided before the debit. */
export interface ProxiedRequest {
  principal: Principal
  target: ProxiedTarget
  /** The lane's key, looked up before the debit (null: read only after it, as a byok provider's is). */
  looked: { value: LaneKey } | { error: unknown } | null
  keys: ProviderKeys
  /** A metered request, its body already read (docs/api.md §7). */
  metered: MeteredProxyRequest | null
  /** The owner's lane's fee percent of a metered call's cost; undefined on the house lane. */
  feePct: number | undefined
  /** Whose key the request goes out with, when known before the debit (filed with the call: docs/api.md §13d). */
  lane: CallLane | undefined
  /** The run budget the request counts against (X-Budget-Run, docs/api.md §13c). */
  run: RunBudget | undefined
  created: Debited['created']
}

export async function payProxied(s: ProxiedDeps, request: Request, x: ProxiedRequest): Promise<Response> {
  const { principal, target, looked, keys, metered, feePct } = x
  const { provider } = target
  const price = provider.proxy.price
  // A stream may run for any length of time: its deadline is a lease, renewed while it runs.
  const opened = await openPaidCall(
    s,
    metered
      ? { principal, target: `proxy:${provider.id}/${metered.req.model}`, price: 0, unpriced: feePct === 0, lease: true, metered: debitMetering(metered.req, feePct), lane: x.lane, run: x.run }
      : { principal, target: `proxy:${provider.id}`, price, unpriced: price === 0, lease: true, lane: x.lane, run: x.run },
  )
  if (opened.kind === 'replay') throw new Error('debit replayed a proxy request that carried no idempotency key')
  const { call } = opened
  const laneKey = await call.keyOrVoid(async () => {
    if (looked === null) return keys.laneKeyFor({ kind: 'proxy', provider }, principal.accountId)
    if ('error' in looked) throw looked.error
    return looked.value
  })
  const endUser = laneKey.lane === 'house' ? endUserId(s.endUserSecret, principal.accountId) : null
  try {
    return await relayDebited(s, request, { target, apiKey: laneKey.key, lane: laneKey.lane, endUser, call, metered, feePct, created: x.created })
  } catch (e) {
    // Settled paths released the lease already; an unexpected error leaves the call to the sweeper,
    // which refunds it once the lease lapses, as it would after a crash.
    call.leaveToSweeper()
    throw e
  }
}

/** A proxied request past its debit: what the relay needs to forward it and settle it. */
interface Debited {
  target: ProxiedTarget
  apiKey: string
  /** The house's key or the owner's own (docs/api.md §12): the scope headers and the end-user id follow it. */
  lane: LaneKey['lane']
  /** The end-user id the house lane writes into a metered body; null on the owner's lane. */
  endUser: string | null
  call: DebitedCall
  /** A metered request, its body already read (docs/api.md §7). */
  metered: MeteredProxyRequest | null
  /** The owner's lane's fee percent of a metered call's cost; undefined on the house lane. */
  feePct: number | undefined
  /**
   * A create on the house lane's owned prefix: told the id its answer carries, then the tokens a
   * response chained from it carries once its usage is the provider's (house-objects.ts).
   */
  created: { record: (objectId: string) => void; settled: (objectId: string, contextTokens: number) => void } | null
}

/** Forwards a debited request and settles it by the shared outcome table (paid-request/). */
async function relayDebited(s: ProxiedDeps, request: Request, x: Debited): Promise<Response> {
  const { target, apiKey, call, metered, feePct, created } = x
  const { provider } = target
  const cap = s.cfg.PROXY_MAX_RESPONSE_BYTES
  let httpStatus: number | null = null
  const forward = metered ? meteredForward(metered, call.metered?.clamped ? call.metered.maxOut : null, s.cfg.CREDITS_PER_USD, { endUser: x.endUser, feePct }) : null
  // Only an answer that created something names an object of the account's (an error body has no id of ours).
  let createdId: string | null = null
  const recordCreated = (id: string) => {
    if (httpStatus === null || httpStatus < 200 || httpStatus >= 300) return
    createdId = id
    created!.record(id)
  }
  const meter: UsageMeter | null = forward && created ? recordingAnswerId(forward.meter, metered!.req.stream, recordCreated) : (forward?.meter ?? null)
  const facts = (outcome: CallOutcome, upstreamBytes: number): SettleFacts => {
    const usage = metered && meter ? usageAtEnd(metered, meter, outcome, upstreamBytes) : undefined
    // An estimate could under-count what a chained request carries: only the provider's count bounds it.
    if (createdId && usage?.source === 'provider') created!.settled(createdId, contextTokens(usage.tokens))
    return { httpStatus, usage }
  }
  const settle = (outcome: CallOutcome, upstreamBytes = 0) => call.settle(outcome, facts(outcome, upstreamBytes))
  /**
   * How a metered answer that reached its end is settled: the answer ends once the settle is queued
   * on Redis, not once applied (DebitedCall.settleQueued; docs/decisions.md, issue 14). Nothing in
   * it depends on the settle (its headers show the reservation), and the reservation it releases
   * only ever held more than the charge.
   */
  const settleAtEnd = (outcome: CallOutcome, upstreamBytes: number) =>
    call.settleQueued(outcome, facts(outcome, upstreamBytes), (e) => s.log.error('settle_failed', { call_id: call.callId, error: String(e) }))
  /** Settles a refunded failure and answers it as the paid call would. */
  const fail = async (outcome: CallOutcome) => providerFailure(call, await settle(outcome), { providerStatus: httpStatus, cap })

  const upstream = new AbortController()
  const abortUpstream = () => upstream.abort()
  // A client that goes away takes its upstream request with it — except a metered one's, which is
  // read to its end so that the usage charged is the usage the provider bills (metered-relay.ts).
  if (!metered) request.signal.addEventListener('abort', abortUpstream, { once: true })
  // … for the drain's bound at most, from the moment the client left, whatever the upstream is at.
  // The relay's drain bounds its own reads; before it (the request on its way, the answer's headers
  // or first bytes awaited) nothing did: an upstream that stalled there held the call for the
  // runtime's 5-minute idle timeout, and one that trickled header bytes held it unsettled forever.
  else request.signal.addEventListener('abort', () => setTimeout(abortUpstream, meteredDrain.ms).unref(), { once: true })

  const method = request.method
  const withBody = method !== 'GET' && method !== 'HEAD' && request.body !== null
  let bodyTooBig = false
  const refuseBody = async () => {
    abortUpstream()
    await settle('request_too_large')
    return bodyTooLarge(s.cfg.MAX_BODY_BYTES)
  }
  const countUp = (n: number) => s.metrics.proxyBytes.inc({ provider: provider.id, direction: 'upstream' }, n)
  // The forwarded body of a metered request may differ from the one received (a clamp, the usage option).
  const sent = await requestProvider({
    provider,
    method,
    path: target.path + target.query,
    apiKey,
    incoming: request.headers,
    drop: x.lane === 'house' ? isScopeHeader : undefined,
    body: forward ? forward.body : withBody ? countedBody(request, s.cfg.MAX_BODY_BYTES, countUp, () => (bodyTooBig = true)) : undefined,
    maxBytes: cap,
    abort: upstream.signal,
    // A metered request too is not_sent when its client left first: its drain exists so that what
    // the provider bills is what we charge, and a request never sent is billed nothing.
    client: request.signal,
    outlivesClient: metered !== null,
  })
  if (forward && !(sent.kind === 'failed' && sent.outcome === 'not_sent')) countUp(Buffer.byteLength(forward.body))
  // An upstream that answered on a truncated body answered another request than the one sent.
  if (bodyTooBig) throw await refuseBody()
  if (sent.kind === 'failed') {
    if (clientGone(sent.outcome)) {
      await settle(sent.outcome)
      return new Response(null, { status: 499 })
    }
    throw await fail(sent.outcome)
  }
  httpStatus = sent.status
  if (sent.kind === 'refused') {
    abortUpstream()
    throw await fail(sent.outcome)
  }
  const answered: CallOutcome = sent.outcome
  const { declared } = sent

  const headers = downstreamHeaders(
    sent.headers,
    apiKey,
    {
      'x-pab-call-id': call.callId,
      // Headers leave before the usage is known: a metered call shows what it reserved (docs/api.md §7).
      ...(call.metered ? { 'x-pab-reserved': String(call.price) } : { 'x-pab-charged': String(call.price) }),
      ...(call.metered?.clamped ? { 'x-pab-max-tokens-clamped': String(call.metered.maxOut) } : {}),
      'x-pab-balance': String(call.balance),
      ...runHeaders(call),
    },
    sent.decoded,
  )
  // A metered answer's usage gains the cost (docs/api.md §7): the provider's length is no longer the body's.
  if (meter) headers.delete('content-length')
  if (!sent.body) {
    void settle(answered).catch((e) => s.log.error('settle_failed', { call_id: call.callId, error: String(e) }))
    return new Response(null, { status: sent.status, headers })
  }
  // The first chunk is read before answering, so that a body which fails or is already over the cap
  // before any byte could reach the client still gets an error status rather than a cut 200.
  const reader = sent.body.getReader()
  let first: Awaited<ReturnType<typeof reader.read>>
  try {
    first = await reader.read()
  } catch {
    // A metered upstream is not aborted with its client: its failure is the provider's.
    if (sent.clientLeft()) {
      await settle('client_closed')
      return new Response(null, { status: 499 })
    }
    throw await fail('provider_error')
  }
  if (first.done) {
    void settle(answered).catch((e) => s.log.error('settle_failed', { call_id: call.callId, error: String(e) }))
    return new Response(null, { status: sent.status, headers })
  }
  if (first.value.byteLength > cap) {
    abortUpstream()
    throw await fail('too_large')
  }
  // The whole answer came in the first read (its declared length with no content coding, or its
  // end right behind it): nothing is left to stream, so it is answered as bytes once the call is
  // settled (docs/decisions.md, issues 14 and 17).
  const after = await afterFirst(reader, declared > 0 && first.value.byteLength === declared)
  if (after.whole) {
    const upstreamBytes = first.value.byteLength
    const body = wholeAnswer(first.value, { apiKey, meter })
    s.metrics.proxyBytes.inc({ provider: provider.id, direction: 'downstream' }, body.byteLength)
    const ended = { relayed: body.byteLength, clientLeft: request.signal.aborted }
    if (meter) await settleAtEnd(meteredOutcome('complete', ended, answered, meter), upstreamBytes)
    else
      await settle(ended.clientLeft && answered === 'ok' ? 'client_closed' : answered, upstreamBytes).catch((e) =>
        // The answer is the client's all the same (a stream would have sent it before its settle);
        // the unsettled call is refunded by the sweeper once its lease lapses, as after a crash.
        s.log.error('settle_failed', { call_id: call.callId, error: String(e) }),
      )
    return new Response(body, { status: sent.status, headers })
  }
  const ends: Record<RelayEnd, CallOutcome> = { complete: answered, too_large: 'too_large', upstream_error: 'provider_error', client_closed: 'client_closed' }
  if (meter) {
    const body = meteredRelay(after.reader, first.value, {
      cap,
      apiKey,
      meter,
      abortUpstream,
      clientSignal: request.signal,
      drainMs: meteredDrain.ms,
      onEnd: (how, o) => {
        s.metrics.proxyBytes.inc({ provider: provider.id, direction: 'downstream' }, o.relayed)
        const outcome = meteredOutcome(how, o, answered, meter)
        // A cut answer (a refund, the cap, a client gone) keeps waiting for its settle: rare, and a
        // refund is applied before the client sees the cut (relay.ts).
        return how === 'complete' && !o.clientLeft ? settleAtEnd(outcome, o.upstream) : settle(outcome, o.upstream)
      },
    })
    return new Response(body, { status: sent.status, headers })
  }
  const body = relay(after.reader, first.value, {
    cap,
    apiKey,
    abortUpstream,
    clientGone: () => request.signal.aborted,
    onEnd: (how, bytes) => {
      s.metrics.proxyBytes.inc({ provider: provider.id, direction: 'downstream' }, bytes)
      return settle(ends[how])
    },
  })
  return new Response(body, { status: sent.status, headers })
}

/**
 * How a metered relay's ending is settled: output cut off after it reached the client was spent
 * (charged: the provider's usage, else an estimate); a stream whose only news was a provider error
 * failed before any output (refunded, docs/api.md §7); a client gone before the end still owes the work.
 */
function meteredOutcome(how: RelayEnd, o: { relayed: number; clientLeft: boolean }, answered: CallOutcome, meter: UsageMeter): CallOutcome {
  if (how === 'upstream_error') return o.relayed > 0 ? 'provider_cut' : 'provider_error'
  if (how !== 'complete') return how
  if (meter.failedBeforeOutput()) return 'provider_error'
  return o.clientLeft && answered === 'ok' ? 'client_closed' : answered
}

/**
 * An answer that arrived whole in the first read, as the client gets it: metered (its usage read)
 * and masked, as the relays pass a chunk on. One write to the client (headers, body and end)
 * where a stream's headers go before its first chunk, and no stream to run.
 */
function wholeAnswer(chunk: Uint8Array, o: { apiKey: string; meter: UsageMeter | null }): Uint8Array {
  const passed = o.meter ? concat(o.meter.push(chunk), o.meter.flush()) : chunk
  if (!o.apiKey) return passed
  const scrubber = new KeyScrubber(o.apiKey)
  return concat(scrubber.push(passed), scrubber.flush())
}

/**
 * The request body as it streams to the provider, counted for the metrics. A declared length is
 * taken as is (app.ts refused it on arrival if past the limit); a chunked body is cut at the limit.
 */
function countedBody(request: Request, limit: number, count: (bytes: number) => void, over: () => void): ReadableStream<Uint8Array> | null {
  const declared = request.headers.get('content-length')
  if (declared !== null) {
    count(Number(declared) || 0)
    return request.body
  }
  return request.body ? limitedStream(request.body, limit, count, over) : null
}

/** The tokens a response chained from this one carries as input: all of its own, input and output. */
function contextTokens(t: TokenCounts): number {
  return t.input + t.cached + t.output + (t.cache_write ?? 0) + (t.cache_write_1h ?? 0)
}

/**
 * The run the request counts against (docs/api.md §13c), in the header's own form: its spend after
 * the debit (a metered request's reservation included, released at its settle).
 */
function runHeaders(call: DebitedCall): Record<string, string> {
  const run = call.runState
  if (!run) return {}
  return { 'x-pab-run': `${run.id}; max=${run.max}; spent=${run.spent}; expires_at=${new Date(run.expiresAt).toISOString()}` }
}
