/**
 * One proxied request, its path already found safe (path.ts): who is calling → the debit (debit-13:
 * token, rate limit, agent state, allowlists incl. `proxy:<provider>`, caps, request cap for
 * unpriced routes, balance) → which provider key, read only now so that a refused token never
 * reaches the vault (none: the debit is voided) → the upstream request, both bodies streamed →
 * settlement: refund on provider failure or the response cap, file the call for activity and the
 * public counters.
 * errors: UNAUTHORIZED, VAULT_KEY_MISSING, KEY_UNREADABLE,
 *         API_UNAVAILABLE, every denial of debit-13, PAYMENT_REQUIRED, PROVIDER_ERROR (refunded),
 *         RESPONSE_TOO_LARGE (refunded).
 */
import type { Principal } from '../auth/principal'
import { ApiError } from '../errors'
import { applyReferralBonus } from '../ledger/accounts'
import { recordCall, type CallRecord } from '../ledger/calls'
import { debit, type DebitOutcome } from '../ledger/debit'
import { refund } from '../ledger/refund'
import { keyAfterDebit } from '../ledger/void'
import { paymentRequired } from '../payments/payment-required'
import type { Services } from '../services'
import { decodeBody, decodersFor } from '../upstream/content-encoding'
import { downstreamHeaders, upstreamHeaders } from './headers'
import type { ProviderKeys } from './keys'
import type { ProxyTarget } from './path'
import { relay, type RelayEnd } from './relay'
import { bodyTooLarge, limitedStream } from '../edge/body'

export interface ProxyInput {
  /** Provider and path, resolved from the raw request target by resolveProxyTarget. */
  target: ProxyTarget
  ip: string
}

/** Outcome of a proxied request as filed in activity; the refunded ones give the debit back. */
type Outcome = 'ok' | 'provider_4xx' | 'provider_error' | 'network' | 'too_large' | 'request_too_large' | 'client_closed'
// A chunked request body past MAX_BODY_BYTES is found only while it streams, after the debit: the
// request was refused, so it is not the caller's bill either.
const REFUNDED: ReadonlySet<Outcome> = new Set(['provider_error', 'network', 'too_large', 'request_too_large'])

export async function proxyRequest(s: Services, keys: ProviderKeys, request: Request, input: ProxyInput): Promise<Response> {
  const { target } = input
  const { provider } = target
  const principal = await authenticate(s, request, input.ip)

  const price = provider.proxy.price
  const slug = `proxy:${provider.id}`
  // A stream may run for any length of time: the debit's deadline is a lease, renewed while it runs.
  const d = await debit(s.ctx, { principal, target: slug, price, unpriced: price === 0, idempotency: undefined, abandonAfterMs: s.leases.leaseMs })
  if (d.kind === 'insufficient') throw await paymentRequired(s, principal.accountId, d.balance, d.price, { mandateRef: d.mandateRef })
  if (d.kind === 'replay') throw new Error('debit replayed a proxy request that carried no idempotency key')
  const apiKey = await keyAfterDebit(s.ctx, s.log, { principal, debit: d, target: slug, price }, () => keys.get(provider, principal.accountId))
  const releaseLease = s.leases.hold(principal.accountId, d.callId)
  try {
    return await relayDebited(s, request, { target, principal, apiKey, price, slug, debit: d, releaseLease })
  } catch (e) {
    // Settled paths released the lease already; an unexpected error leaves the call to the sweeper,
    // which refunds it once the lease lapses, as it would after a crash.
    releaseLease()
    throw e
  }
}

/** A proxied request past its debit: what the relay needs to forward it and settle it once. */
interface Debited {
  target: ProxyTarget
  principal: Principal
  apiKey: string
  price: number
  slug: string
  debit: Extract<DebitOutcome, { kind: 'debited' }>
  /** Stops renewing the call's in-flight lease (leases.ts): called when the request settles. */
  releaseLease: () => void
}

/** Forwards a debited request and settles it: refund on provider failure or the cap, file the call. */
async function relayDebited(s: Services, request: Request, x: Debited): Promise<Response> {
  const { target, principal, apiKey, price, slug, debit: d, releaseLease } = x
  const { provider } = target
  const started = performance.now()
  let httpStatus: number | null = null
  let settled: Promise<number | null> | null = null
  /** Files the request once; returns the balance after the refund when there was one. */
  const settle = (outcome: Outcome): Promise<number | null> =>
    (settled ??= (async () => {
      releaseLease()
      const refunded = REFUNDED.has(outcome)
      const rec: CallRecord = {
        call_id: d.callId,
        slug,
        agent_id: principal.agentId,
        charged: price,
        refunded,
        outcome,
        http_status: httpStatus,
        latency_ms: Math.round(performance.now() - started),
        at: new Date(d.at).toISOString(),
      }
      let balance: number | null = null
      if (refunded) {
        const r = await refund(s.ctx, { accountId: principal.accountId, agentId: principal.agentId, callId: d.callId, day: d.day, reason: outcome })
        balance = r.balance
      }
      // Filing the metadata and the referral bonus never delay the bytes.
      void recordCall(s.ctx, principal.accountId, rec).catch((e) => s.log.error('record_call_failed', { call_id: d.callId, error: String(e) }))
      if (outcome === 'ok' && d.referrerId)
        void applyReferralBonus(s.ctx, principal.accountId, d.referrerId, d.callId).catch((e) =>
          s.log.error('referral_bonus_failed', { call_id: d.callId, error: String(e) }),
        )
      return balance
    })())

  const upstream = new AbortController()
  const abortUpstream = () => upstream.abort()
  // A client that goes away takes its upstream request with it.
  if (request.signal.aborted) abortUpstream()
  else request.signal.addEventListener('abort', abortUpstream, { once: true })

  const method = request.method
  const withBody = method !== 'GET' && method !== 'HEAD' && request.body !== null
  let bodyTooBig = false
  const refuseBody = async () => {
    abortUpstream()
    await settle('request_too_large')
    return bodyTooLarge(s.cfg.MAX_BODY_BYTES)
  }
  let res: Response
  try {
    res = await fetch(provider.base_url + target.path + target.query, {
      method,
      headers: upstreamHeaders(request.headers, provider, apiKey),
      body: withBody
        ? countedBody(request, s.cfg.MAX_BODY_BYTES, (n) => s.metrics.proxyBytes.inc({ provider: provider.id, direction: 'upstream' }, n), () => (bodyTooBig = true))
        : undefined,
      duplex: 'half',
      redirect: 'manual',
      signal: upstream.signal,
      // Bun would decode on its own, out of the cap's sight; an encoded body is decoded below instead.
      decompress: false,
    } as RequestInit)
  } catch {
    if (bodyTooBig) throw await refuseBody()
    if (request.signal.aborted) {
      await settle('client_closed')
      return new Response(null, { status: 499 })
    }
    const balance = await settle('network')
    throw new ApiError('PROVIDER_ERROR', { refunded: true, call_id: d.callId, provider_status: null, balance })
  }
  // An upstream that answered on a truncated body answered another request than the one sent.
  if (bodyTooBig) throw await refuseBody()
  httpStatus = res.status

  // Redirects are not followed, and not handed to the client either: its SDK would follow the
  // Location with our token in x-api-key to a host the catalog never named.
  if (res.status >= 500 || (res.status >= 300 && res.status < 400 && res.headers.has('location'))) {
    abortUpstream()
    const balance = await settle('provider_error')
    throw new ApiError('PROVIDER_ERROR', { refunded: true, call_id: d.callId, provider_status: res.status, balance })
  }
  // An upstream that ignored our identity request is decoded here, so that the cap counts and the
  // mask sees the bytes the client reads (docs/decisions.md); a coding we cannot undo is its failure.
  const decoders = decodersFor(res.headers.get('content-encoding'))
  if (!decoders) {
    abortUpstream()
    const balance = await settle('provider_error')
    throw new ApiError('PROVIDER_ERROR', { refunded: true, call_id: d.callId, provider_status: res.status, balance })
  }
  const cap = s.cfg.PROXY_MAX_RESPONSE_BYTES
  // An encoded body's length is of the wire bytes, not of what the client gets: the relay counts those.
  const declared = decoders.length ? 0 : Number(res.headers.get('content-length') ?? '0')
  if (declared > cap) {
    abortUpstream()
    const balance = await settle('too_large')
    throw new ApiError('RESPONSE_TOO_LARGE', { cap, refunded: true, call_id: d.callId, balance })
  }

  const done: Outcome = res.status >= 400 ? 'provider_4xx' : 'ok'
  const headers = downstreamHeaders(
    res.headers,
    apiKey,
    {
      'x-pab-call-id': d.callId,
      'x-pab-charged': String(price),
      'x-pab-balance': String(d.balance),
    },
    decoders.length > 0,
  )
  if (!res.body) {
    void settle(done)
    return new Response(null, { status: res.status, headers })
  }
  // The first chunk is read before answering, so that a body which fails or is already over the cap
  // before any byte could reach the client still gets an error status rather than a cut 200.
  const reader = (decoders.length ? decodeBody(res.body, decoders) : res.body).getReader()
  let first: Awaited<ReturnType<typeof reader.read>>
  try {
    first = await reader.read()
  } catch {
    if (request.signal.aborted) {
      await settle('client_closed')
      return new Response(null, { status: 499 })
    }
    const balance = await settle('provider_error')
    throw new ApiError('PROVIDER_ERROR', { refunded: true, call_id: d.callId, provider_status: res.status, balance })
  }
  if (first.done) {
    void settle(done)
    return new Response(null, { status: res.status, headers })
  }
  if (first.value.byteLength > cap) {
    abortUpstream()
    const balance = await settle('too_large')
    throw new ApiError('RESPONSE_TOO_LARGE', { cap, refunded: true, call_id: d.callId, balance })
  }
  const ends: Record<RelayEnd, Outcome> = { complete: done, too_large: 'too_large', upstream_error: 'provider_error', client_closed: 'client_closed' }
  const body = relay(reader, first.value, {
    cap,
    apiKey,
    abortUpstream,
    clientGone: () => request.signal.aborted,
    onEnd: (how, bytes) => {
      s.metrics.proxyBytes.inc({ provider: provider.id, direction: 'downstream' }, bytes)
      return settle(ends[how])
    },
  })
  return new Response(body, { status: res.status, headers })
}

/** Our token in `Authorization: Bearer` (OpenAI-style SDKs) or `x-api-key` (Anthropic's SDK). */
async function authenticate(s: Services, request: Request, ip: string): Promise<Principal> {
  const auth = request.headers.get('authorization')
  const bearer = auth && /^bearer /i.test(auth) ? auth.slice(7).trim() : undefined
  const apiKey = request.headers.get('x-api-key') ?? undefined
  const principal = (await s.guard.tokens.resolve(bearer)) ?? (await s.guard.tokens.resolve(apiKey))
  if (principal) return principal
  await s.guard.admitAnonymous(ip)
  throw new ApiError('UNAUTHORIZED')
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
