/**
 * Which webhook URLs an owner may register: https only, to a public host. Plain http is allowed
 * for 127.0.0.1 alone and only when WEBHOOKS_ALLOW_INSECURE_LOOPBACK=1 (tests, local work).
 * A host is judged after normalising it the way resolvers read it (case, one trailing dot, IPv4 in
 * decimal, octal, hex or short forms, brackets and zone ids of IPv6): an address in a
 * special-purpose block (special-address.ts) or a name kept for local networks is refused. A name
 * is resolved again at every delivery (webhook-send.ts), since what it resolves to can change.
 * errors: BAD_REQUEST (field url).
 */
import { isIP } from 'node:net'
import { ApiError } from '../errors'
import { isSpecialAddress } from './special-address'

const EXPECTED = 'an https:// URL of a public host, without credentials, at most 2048 characters'

/** Names that never leave the local network (RFC 6761, RFC 8375, the cloud metadata hosts). */
const LOCAL_NAMES = ['localhost', 'local', 'internal', 'home.arpa']

/** A URL's host as a delivery sees it: refused, an address literal, or a name to resolve. */
export type EndpointHost = { kind: 'refused' } | { kind: 'address'; address: string } | { kind: 'name'; name: string }

export function endpointHost(u: URL, allowInsecureLoopback: boolean): EndpointHost {
  if (allowInsecureLoopback && u.protocol === 'http:' && u.hostname === '127.0.0.1') return { kind: 'address', address: '127.0.0.1' }
  if (u.protocol !== 'https:') return { kind: 'refused' }
  let host = u.hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '')
  if (host.endsWith('.')) host = host.slice(0, -1)
  const address = isIP(host) ? host : looseIPv4(host)
  if (address) return isSpecialAddress(address) ? { kind: 'refused' } : { kind: 'address', address }
  const labels = host.split('.')
  if (labels.some((l) => l === '') || LOCAL_NAMES.some((n) => host === n || host.endsWith('.' + n))) return { kind: 'refused' }
  return { kind: 'name', name: host }
}

export function checkEndpointUrl(raw: string, allowInsecureLoopback: boolean): string {
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    throw new ApiError('BAD_REQUEST', { field: 'url', expected: EXPECTED })
  }
  if (raw.length > 2048 || u.username || u.password || endpointHost(u, allowInsecureLoopback).kind === 'refused')
    throw new ApiError('BAD_REQUEST', { field: 'url', expected: EXPECTED })
  return u.toString()
}

/**
 * An IPv4 address written as inet_aton reads it (`2130706433`, `0x7f.1`, `0177.0.0.1`), dotted
 * back; null when the host is a name. The URL parser already does this for http(s) URLs; this
 * keeps the check right for any host string it is given.
 */
function looseIPv4(host: string): string | null {
  const parts = host.split('.')
  if (parts.length > 4 || !parts.every((p) => /^(0x[0-9a-f]*|0[0-7]*|[1-9][0-9]*)$/.test(p))) return null
  const nums = parts.map((p) => (p.startsWith('0x') ? parseInt(p.slice(2) || '0', 16) : p.length > 1 && p.startsWith('0') ? parseInt(p, 8) : Number(p)))
  const last = nums.pop()!
  if (nums.some((n) => n > 255) || last >= 256 ** (4 - nums.length)) return null
  let value = last
  nums.forEach((n, i) => (value += n * 256 ** (3 - i)))
  return [24, 16, 8, 0].map((s) => Math.floor(value / 2 ** s) % 256).join('.')
}
