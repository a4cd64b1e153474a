/**
 * Who an unauthenticated request is, for the per-IP rate limit (CONTRACT §6). Two spellings of one
 * client must be one client, and one client must not be many:
 * - An IPv4 client of a dual-stack socket (Bun's listener without a hostname, as src/index.ts runs it)
 *   arrives as `::ffff:203.0.113.7`. Compared as written, no TRUSTED_PROXIES entry (`10.0.0.2`) ever
 *   matched its proxy's socket, so X-Forwarded-For was ignored and every client behind the proxy
 *   shared the proxy's one budget: one client's ten requests locked all the others out of signup.
 * - An IPv6 subscriber is given a /64 (2^64 addresses) and picks a new address at will: counted per
 *   address, the limit did not hold for it at all. IPv6 clients are counted per /64.
 * - A port written beside a forwarded address is the client's source port, new on every connection.
 */
import { isIPv4, isIPv6 } from 'node:net'

const MAPPED = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i

const V4_PORT = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/
const V6_BRACKETED = /^\[([^\]]+)\](?::\d+)?$/

/**
 * The address as one spelling: brackets, zone and port dropped (some proxies, Azure's among them,
 * write `203.0.113.7:51234` into X-Forwarded-For: a new source port must not be a new client), an
 * IPv4-mapped IPv6 address as IPv4.
 */
export function canonicalIp(address: string): string {
  let a = address.trim()
  a = V6_BRACKETED.exec(a)?.[1] ?? V4_PORT.exec(a)?.[1] ?? a
  a = a.replace(/%.*$/, '')
  const mapped = MAPPED.exec(a)
  if (mapped && isIPv4(mapped[1]!)) return mapped[1]!
  return isIPv6(a) ? a.toLowerCase() : a
}

/** The first four groups of an IPv6 address, each as hex without leading zeros. */
function prefix64(a: string): string {
  // A trailing dotted quad (`64:ff9b::192.0.2.1`) is the last two groups: outside the /64 anyway.
  const [head = '', tail] = a.replace(/:\d{1,3}(?:\.\d{1,3}){3}$/, ':0:0').split('::') as [string, string | undefined]
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right]
  return groups
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')
}

/** The identity the per-IP limit counts: an IPv4 address, or an IPv6 address's /64. */
export function rateKeyOf(address: string): string {
  const a = canonicalIp(address)
  return isIPv6(a) ? `${prefix64(a)}::/64` : a
}
