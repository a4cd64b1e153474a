/**
 * Path safety of a proxied request, checked on the raw request target before authentication,
 * debit or any upstream connection (CONTRACT §6). The upstream host comes only from the catalog;
 * this decides which path on it may be asked for.
 * errors: PROXY_BAD_PATH (with `reason`), PROXY_UNKNOWN_PROVIDER.
 */
import { ApiError } from '../errors'
import type { Provider } from '../modules/catalog/service'

export const PROXY_PREFIX = '/proxy/'
const MAX_TARGET = 4096
/** Percent-decoding rounds: catches double (%252e) and triple encodings of `.`, `/` and `\`. */
const DECODE_ROUNDS = 3

export interface ProxyTarget {
  provider: Provider & { proxy: NonNullable<Provider['proxy']> }
  /** The upstream path as received (still percent-encoded), e.g. `/v1/chat/completions`. */
  path: string
  /** `?…` as received, or ''. */
  query: string
}

function bad(reason: string, extra: Record<string, unknown> = {}): never {
  throw new ApiError('PROXY_BAD_PATH', { reason, ...extra })
}

export function resolveProxyTarget(raw: string, providers: ReadonlyMap<string, Provider>): ProxyTarget {
  if (raw.length > MAX_TARGET) bad('too_long')
  // Absolute-form (`http://host/...`) and authority-form targets name a host: never ours to take.
  if (!raw.startsWith('/')) bad('absolute_url')
  if (raw.includes('#')) bad('fragment')
  const q = raw.indexOf('?')
  const path = q === -1 ? raw : raw.slice(0, q)
  const query = q === -1 ? '' : raw.slice(q)
  const decoded = checkPath(path)
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
  return { provider: provider as ProxyTarget['provider'], path: rest, query }
}

/** Rejects traversal and host-changing spellings in any decoding of the path; returns the last decoding. */
function checkPath(path: string): string {
  const spellings = [path]
  let cur = path
  for (let i = 0; i < DECODE_ROUNDS; i++) {
    let next: string
    try {
      next = decodeURIComponent(cur)
    } catch {
      // A malformed escape in what the client sent is refused; one that only appears after a
      // decoding (a literal "%" sent as %25) is data, not an encoding.
      if (i === 0) bad('bad_percent_encoding')
      break
    }
    if (next === cur) break
    spellings.push(next)
    cur = next
  }
  for (const s of spellings) {
    if (/[\x00-\x1f\x7f]/.test(s)) bad('control_character')
    if (s.includes('\\')) bad('backslash')
    if (s.includes('//')) bad('double_slash')
    if (s.includes('@')) bad('at_sign')
    // `.` and `..` segments, also Tomcat's `..;x` spelling.
    if (/(^|\/)\.\.?(;[^/]*)?(\/|$)/.test(s)) bad('dot_segment')
    if (/(^|\/)[a-z][a-z0-9+.-]*:\//i.test(s)) bad('scheme')
  }
  return cur
}
