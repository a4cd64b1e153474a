/**
 * Every request to a provider, the paid call's and the proxy's: the URL from the catalog (never a
 * redirect followed: the host comes only from the catalog), the key injected and the client's
 * headers scrubbed (headers.ts), identity encoding asked for and Bun's own decoding off, so that
 * the response cap and the key mask count the bytes the client reads (content-encoding.ts); the
 * timeout or the client's leaving; and how the provider's answer ends the call before its body is
 * read (outcomeOfAnswer). The caller reads the body: the proxy streams it, the capability call
 * buffers it (call.ts).
 */
import type { Provider } from '../catalog/catalog'
import { decodeBody, decodersFor } from './content-encoding'
import { upstreamHeaders } from './headers'

export interface ProviderRequest {
  provider: Provider
  method: string
  /** The path (and the proxy's query) after the catalog's `base_url`. */
  path: string
  /** Query parameters set on it (a capability call's GET or DELETE params). */
  params?: [string, string][]
  apiKey: string
  /** The client's headers, passed on past the header policy (the proxy); none on a capability call. */
  incoming?: Headers
  /** More client headers kept back (the house lane's scope headers). */
  drop?: (name: string) => boolean
  /** The body's type, when we wrote the body (a capability call's params). */
  contentType?: string
  /** A string is a body we wrote: it carries its own length, not the client's. */
  body?: string | ReadableStream<Uint8Array> | null
  /** The response cap: an answer that declares more is refused unread. */
  maxBytes: number
  timeoutMs?: number
  /** The caller's own abort (the proxy's, which also ends a drained metered request). */
  abort?: AbortSignal
  /**
   * The client's request signal. Gone before the request leaves: `not_sent`, the provider never
   * asked. Gone when the request fails: `client_closed` — unless `outlivesClient` (a metered proxy
   * request is read to its end for the usage the provider bills: its failure is the provider's).
   */
  client?: AbortSignal
  outlivesClient?: boolean
}

/** How a request ended with no answer: never sent, its client gone, its time up, the wire broken. */
export type NoAnswer = 'not_sent' | 'client_closed' | 'timeout' | 'network'
/** How a provider answered, when it did: what the caller is handed, or a failure refused before its body. */
export type AnswerOutcome = 'ok' | 'provider_4xx' | 'provider_error' | 'redirect'
/** Every ending a provider request can have; the paid request's settlement table names each (paid-request/outcome.ts). */
export type ProviderOutcome = NoAnswer | AnswerOutcome | 'bad_encoding' | 'too_large'

/** The client left (before the request was sent, or since): nobody reads an answer, so 499 is answered. */
export const clientGone = (outcome: string): outcome is 'not_sent' | 'client_closed' => outcome === 'not_sent' || outcome === 'client_closed'

export type ProviderAnswer =
  | { kind: 'failed'; outcome: NoAnswer }
  /** An answer the call cannot pass on (a 5xx, a redirect, a coding we cannot undo, past the cap): its body cancelled. */
  | { kind: 'refused'; outcome: 'provider_error' | 'redirect' | 'bad_encoding' | 'too_large'; status: number }
  | {
      kind: 'answer'
      outcome: 'ok' | 'provider_4xx'
      status: number
      headers: Headers
      /** The body with its content-coding undone (made when first read: `text` reads without it). */
      readonly body: Response['body']
      /**
       * The whole body in one read, decoded as UTF-8, where nothing needs counting: an identity body
       * whose declared length is within the cap (Bun reads no more than is declared). Null otherwise:
       * read `body`, counting. ~10 µs a paid call less than a stream's reader (issue 42).
       */
      text: (() => Promise<string>) | null
      /** Whether a coding was undone (the provider's content-encoding and length no longer apply). */
      decoded: boolean
      /** The declared length of an identity body; 0 when none or encoded. */
      declared: number
      /** How a failed read of the body ended, by the same rule as a failed request. */
      failed: (e: unknown) => NoAnswer
      /** The client left (and took the request with it). */
      clientLeft: () => boolean
    }

export async function requestProvider(r: ProviderRequest): Promise<ProviderAnswer> {
  // Gone already (during the debit or the key read): the provider was never asked, so the debit
  // comes back. Settled as client_closed it was charged for a request nobody sent.
  if (r.client?.aborted) return { kind: 'failed', outcome: 'not_sent' }
  const headers = requestHeaders(r)
  const timeout = r.timeoutMs === undefined ? undefined : sharedTimeout(r.timeoutMs)
  const followed = r.outlivesClient ? undefined : r.client
  const signals = [timeout, r.abort, followed].filter((s): s is AbortSignal => s !== undefined)
  const clientLeft = () => followed?.aborted === true
  const failed = (e: unknown): NoAnswer =>
    clientLeft() ? 'client_closed' : timeout?.aborted || (e as Error).name === 'TimeoutError' ? 'timeout' : 'network'
  const url = r.params ? withQuery(r.provider.base_url + r.path, r.params) : r.provider.base_url + r.path
  let res: Response
  try {
    res = await fetch(url, {
      method: r.method,
      headers,
      body: r.body ?? undefined,
      duplex: 'half',
      redirect: 'manual',
      // One signal is passed as it is: a combined one costs a signal and a listener per source.
      signal: signals.length > 1 ? AbortSignal.any(signals) : signals[0],
      // Bun would decode on its own, out of the cap's sight; an encoded body is decoded here instead.
      decompress: false,
    } as RequestInit)
  } catch (e) {
    return { kind: 'failed', outcome: failed(e) }
  }
  const refused = (outcome: 'provider_error' | 'redirect' | 'bad_encoding' | 'too_large'): ProviderAnswer => {
    void res.body?.cancel().catch(() => {})
    return { kind: 'refused', outcome, status: res.status }
  }
  // A redirect is not handed on either: an SDK would follow the Location with our token to a host
  // the catalog never named.
  // Location is read only where it counts (a 3xx): each header read crosses into Bun's headers.
  const status = res.status
  const outcome = outcomeOfAnswer(status, status >= 300 && status < 400 && res.headers.has('location'))
  if (outcome === 'provider_error' || outcome === 'redirect') return refused(outcome)
  const decoders = decodersFor(res.headers.get('content-encoding'))
  if (!decoders) return refused('bad_encoding')
  // An encoded body's declared length is of the wire bytes; the reader counts the decoded ones.
  const declared = decoders.length ? 0 : Number(res.headers.get('content-length') ?? '0')
  if (declared > r.maxBytes) return refused('too_large')
  let body: Response['body'] | undefined
  return {
    kind: 'answer',
    outcome,
    status: res.status,
    headers: res.headers,
    // Bun makes a JS stream of a body only once it is asked for; one read by `text` never is.
    get body() {
      return (body ??= res.body && decoders.length ? (decodeBody(res.body, decoders) as Response['body']) : res.body)
    },
    text: declared > 0 && !decoders.length ? () => res.text() : null,
    decoded: decoders.length > 0,
    declared,
    failed,
    clientLeft,
  }
}

/** The headers a request goes out with: the policy's (headers.ts), then its body's own. */
function requestHeaders(r: ProviderRequest): Headers {
  const headers = upstreamHeaders(r.incoming, r.provider, r.apiKey, r.drop)
  if (r.contentType) headers.set('content-type', r.contentType)
  if (typeof r.body === 'string') headers.delete('content-length')
  return headers
}

/** How far past its own timeout a request may be aborted: the requests starting within it share one timer. */
const TIMEOUT_GRAIN_MS = 10
const timeouts = new Map<number, { until: number; signal: AbortSignal }>()

/**
 * A signal that aborts (TimeoutError) no sooner than `ms` from now and at most TIMEOUT_GRAIN_MS
 * later, shared by the requests of that timeout starting within one grain: a timer and a signal a
 * grain, not one a request, each kept alive for the whole timeout (~75,000 at 5,000 req/s and 15 s).
 */
function sharedTimeout(ms: number): AbortSignal {
  const now = performance.now()
  let t = timeouts.get(ms)
  if (t === undefined || now >= t.until) timeouts.set(ms, (t = { until: now + TIMEOUT_GRAIN_MS, signal: AbortSignal.timeout(ms + TIMEOUT_GRAIN_MS) }))
  return t.signal
}

/**
 * The outcome of a provider's HTTP answer, the same on both paths. A 3xx with Location is a failure
 * because we never follow it (the upstream host comes only from the catalog) and must not hand it on
 * (an SDK would follow it with our token); a 3xx without one (304) is an answer.
 */
export function outcomeOfAnswer(status: number, hasLocation: boolean): AnswerOutcome {
  if (status >= 500) return 'provider_error'
  if (status >= 300 && status < 400 && hasLocation) return 'redirect'
  if (status >= 400) return 'provider_4xx'
  return 'ok'
}

function withQuery(base: string, params: [string, string][]): URL {
  const url = new URL(base)
  for (const [k, v] of params) url.searchParams.set(k, v)
  return url
}
