/**
 * Path safety of a proxied request, checked before authentication, debit or any upstream
 * connection (docs/api.md §6). The upstream host comes only from the catalog; this decides which path
 * on it may be asked for. Two spellings are checked: the path as the client sent it (raw-target.ts)
 * and the URL's path, which is what gets forwarded; a difference between them means a URL parser
 * rewrote the path, and the request is refused rather than guessed at.
 * errors: PROXY_BAD_PATH (with `reason`), PROXY_UNKNOWN_PROVIDER.
 */
import { ApiError } from '../errors'
import type { Provider } from '../catalog/catalog'

export const PROXY_PREFIX = '/proxy/'
const MAX_PATH = 4096
/** Percent-decoding rounds: catches double (%252e) and triple encodings of `.`, `/` and `\`. */
const DECODE_ROUNDS = 3

export interface ProxyTarget {
  provider: Provider & { proxy: NonNullable<Provider['proxy']> }
  /** The upstream path as received (still percent-encoded), e.g. `/v1/chat/completions`. */
  path: string
  /**
   * The same path fully percent-decoded: what an upstream that decodes escapes routes on, so what
   * decides whether the request is metered (`complet%69ons` is the chat route all the same).
   */
  decodedPath: string
  /** `?…` as received, or ''. */
  query: string
}

function bad(reason: string, extra: Record<string, unknown> = {}): never {
  throw new ApiError('PROXY_BAD_PATH', { reason, ...extra })
}

/** Path and query of an absolute URL (request.url). */
export function splitUrl(url: string): { path: string; query: string } {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  const rest = start === -1 ? '/' : url.slice(start)
  const q = rest.indexOf('?')
  return q === -1 ? { path: rest, query: '' } : { path: rest.slice(0, q), query: rest.slice(q) }
}

/**
 * @param url  request.url: the path that would be forwarded
 * @param raw  the path as sent, segments decoded once (string); null when the listener could not
 *             see it; undefined when the request did not come through the listener
 */
export function resolveProxyTarget(url: string, raw: string | null | undefined, providers: ReadonlyMap<string, Provider>): ProxyTarget {
  const { path, query } = splitUrl(url)
  if (path.length > MAX_PATH) bad('too_long')
  if (raw === null) {
    checkSpellings(path, true)
    bad('non_canonical')
  }
  if (raw !== undefined) {
    let decoded: string
    try {
      decoded = decodeURIComponent(path)
    } catch {
      bad('bad_percent_encoding')
    }
    checkSpellings(raw, false)
    if (decoded !== raw) bad('non_canonical')
  }
  const decoded = checkSpellings(path, true)
  if (!path.startsWith(PROXY_PREFIX)) bad('not_a_proxy_path')

  const slash = path.indexOf('/', PROXY_PREFIX.length)
  const id = slash === -1 ? path.slice(PROXY_PREFIX.length) : path.slice(PROXY_PREFIX.length, slash)
  const provider = providers.get(id)
  if (!provider?.proxy) throw new ApiError('PROXY_UNKNOWN_PROVIDER', { provider: id.slice(0, 64) })

  const rest = slash === -1 ? '/' : path.slice(slash)
  // Both spellings must sit under an allowed prefix: the one forwarded and the one an upstream
  // that decodes percent-escapes would act on.
  const cut = decoded.indexOf('/', PROXY_PREFIX.length)
  const restDecoded = cut === -1 ? '/' : decoded.slice(cut)
  const allowed = provider.proxy.paths
  if (!allowed.some((p) => rest.startsWith(p) && restDecoded.startsWith(p))) bad('outside_allowed_paths', { allowed })
  return { provider: provider as ProxyTarget['provider'], path: rest, decodedPath: restDecoded, query }
}

/**
 * Rejects traversal and host-changing spellings in `path` and in each of its percent-decodings;
 * returns the last decoding. `encoded`: the path is still percent-encoded, so a malformed escape is
 * an error (after a decoding, a "%" is data — a literal percent sign sent as %25).
 */
function checkSpellings(path: string, encoded: boolean): string {
  const spellings = [path]
  let cur = path
  for (let i = 0; i < DECODE_ROUNDS; i++) {
    let next: string
    try {
      next = decodeURIComponent(cur)
    } catch {
      if (i === 0 && encoded) bad('bad_percent_encoding')
      break
    }
    if (next === cur) break
    spellings.push(next)
    cur = next
  }
  for (const s of spellings) {
    if (/[\x00-\x1f\x7f]/.test(s)) bad('control_character')
    if (s.includes('#')) bad('fragment')
    if (s.includes('\\')) bad('backslash')
    if (s.includes('//')) bad('double_slash')
    if (s.includes('@')) bad('at_sign')
    // `.` and `..` segments, also Tomcat's `..;x` spelling.
    if (/(^|\/)\.\.?(;[^/]*)?(\/|$)/.test(s)) bad('dot_segment')
    if (/(^|\/)[a-z][a-z0-9+.-]*:\//i.test(s)) bad('scheme')
  }
  return cur
}
