/**
 * Header policy of every request to a provider (the paid call's and the proxy's), both directions. Every provider-credential header a client SDK sends
 * (`authorization`, `x-api-key`, `api-key`, `anthropic-api-key`, `x-goog-api-key`: ours, or the
 * client's own key), `host`, cookies, forwarding metadata (`forwarded`, `x-forwarded-*`) and
 * hop-by-hop headers (RFC 9110 §7.6.1, any `proxy-*`, plus any named in `Connection`) never cross;
 * the provider key is injected from the catalog's `auth` and its static headers fill in what the
 * client did not send. The key is masked wherever a response would echo it.
 */
import type { Provider } from '../catalog/catalog'
import { keySpellings, maskSpellings } from './scrub'

const HOP_BY_HOP = [
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]

const REQUEST_DROP = new Set([
  ...HOP_BY_HOP,
  'host',
  'authorization',
  'x-api-key',
  // Other SDKs' key headers (Azure, Anthropic's alternative, Google): our token set as the SDK's
  // key lands there, and a client's own key must not reach the provider beside the one we set.
  'api-key',
  'anthropic-api-key',
  'x-goog-api-key',
  'cookie',
  'expect',
  // The proxy asks for identity encoding so the key scrubber sees plain bytes (see upstreamHeaders).
  'accept-encoding',
  // Who the client is stays with us.
  'forwarded',
  // A run budget is ours to count (docs/api.md §13c), not the provider's business.
  'x-budget-run',
  'x-real-ip',
])
/** Whole families: every `x-forwarded-*` (port, prefix, server, …) and every `proxy-*`. */
const REQUEST_DROP_PREFIX = /^(x-forwarded-|proxy-)/

const RESPONSE_DROP = new Set([
  ...HOP_BY_HOP,
  'set-cookie',
  'set-cookie2',
  // Advertises the provider's alternative transports as if they were ours.
  'alt-svc',
])
/** Proxy-* is about the hop to a proxy (Proxy-Authenticate, Proxy-Status), never the client's business. */
const RESPONSE_DROP_PREFIX = /^proxy-/

function connectionTokens(value: string | null): Set<string> {
  if (!value) return new Set()
  return new Set(value.split(',').map((t) => t.trim().toLowerCase()).filter(Boolean))
}

/** The catalog's static headers and the provider key in the provider's own auth header. */
export function authHeaders(provider: Provider, apiKey: string): Record<string, string> {
  const h: Record<string, string> = { ...(provider.headers ?? {}) }
  if (apiKey) h[provider.auth.header] = provider.auth.scheme ? `${provider.auth.scheme} ${apiKey}` : apiKey
  return h
}

/**
 * authHeaders as pairs, kept per provider for its last key, auth and static headers (the same objects):
 * a provider's calls mostly go with one key, and the copy and its entries were made per request.
 */
const pairsOf = new WeakMap<Provider, { apiKey: string; statics: Provider['headers']; auth: Provider['auth']; pairs: readonly (readonly [string, string])[] }>()
function authPairs(provider: Provider, apiKey: string): readonly (readonly [string, string])[] {
  const hit = pairsOf.get(provider)
  if (hit !== undefined && hit.apiKey === apiKey && hit.statics === provider.headers && hit.auth === provider.auth) return hit.pairs
  const pairs = Object.entries(authHeaders(provider, apiKey))
  pairsOf.set(provider, { apiKey, statics: provider.headers, auth: provider.auth, pairs })
  return pairs
}

/**
 * `incoming`: the client's headers, passed on past the policy (none on a capability call: undefined).
 * `drop`: more client headers kept back (on the house key its scope headers, docs/api.md §12; the
 * catalog's `headers` may pin them).
 */
export function upstreamHeaders(incoming: Headers | undefined, provider: Provider, apiKey: string, drop?: (name: string) => boolean): Headers {
  const out = new Headers()
  const authHeader = provider.auth.header.toLowerCase()
  // A capability call passes no client headers: nothing to filter.
  if (incoming) {
    const named = connectionTokens(incoming.get('connection'))
    incoming.forEach((value, name) => {
      if (REQUEST_DROP.has(name) || REQUEST_DROP_PREFIX.test(name) || named.has(name) || name === authHeader || name.startsWith('x-pab-')) return
      if (drop?.(name)) return
      out.set(name, value)
    })
  }
  for (const [name, value] of authPairs(provider, apiKey)) {
    // The auth header is always ours; a static header (e.g. anthropic-version) only fills a gap,
    // since the client's SDK knows which API version it speaks.
    if (name.toLowerCase() === authHeader || !out.has(name)) out.set(name, value)
  }
  out.set('accept-encoding', 'identity')
  return out
}

/** `decoded`: the body is relayed with its content-coding undone, so its coding and length no longer apply. */
export function downstreamHeaders(upstream: Headers, apiKey: string, extra: Record<string, string>, decoded = false): Headers {
  const out = new Headers()
  const named = connectionTokens(upstream.get('connection'))
  const spellings = apiKey ? keySpellings(apiKey) : null
  upstream.forEach((value, name) => {
    if (RESPONSE_DROP.has(name) || RESPONSE_DROP_PREFIX.test(name) || named.has(name)) return
    if (decoded && (name === 'content-encoding' || name === 'content-length')) return
    out.set(name, spellings ? maskSpellings(value, spellings) : value)
  })
  for (const [name, value] of Object.entries(extra)) out.set(name, value)
  return out
}

/**
 * Request headers that choose the provider-side account, organisation, project or workspace a key
 * acts in (`OpenAI-Organization`, `OpenAI-Project`, Google's `X-Goog-User-Project`, …): on the house
 * lane the client never picks which of the operator's scopes pays; the catalog's `headers` may pin one.
 * OpenAI's `OpenAI-Safety-Identifier` header too: the end user on the house lane is the service's to name.
 */
const SCOPE_HEADER = /(organization|organisation|project|workspace|account|tenant|safety-identifier)/i

export const isScopeHeader = (name: string): boolean => SCOPE_HEADER.test(name)
