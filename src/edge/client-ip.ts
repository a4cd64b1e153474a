/**
 * Who an unauthenticated request is, for the per-IP rate limit (docs/api.md §6). Two spellings of one
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

/** The eight 16-bit groups of an IPv6 address (a trailing dotted quad as its last two). */
function groupsOf(a: string): number[] {
  const quad = /:(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(a)
  const text = quad ? a.slice(0, quad.index) + ':' + (((+quad[1]! << 8) | +quad[2]!) >>> 0).toString(16) + ':' + (((+quad[3]! << 8) | +quad[4]!) >>> 0).toString(16) : a
  const [head = '', tail] = text.split('::') as [string, string | undefined]
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right]
  return groups.map((g) => parseInt(g, 16))
}

/** The first four groups of an IPv6 address, each as hex without leading zeros. */
function prefix64(a: string): string {
  return groupsOf(a)
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')
}

/** An address as a number and its width in bits (32 or 128), or null when it is not an address. */
function bitsOf(address: string): { value: bigint; width: 32 | 128 } | null {
  const a = canonicalIp(address)
  if (isIPv4(a)) return { value: BigInt(a.split('.').reduce((n, o) => n * 256 + Number(o), 0)), width: 32 }
  if (isIPv6(a)) return { value: groupsOf(a).reduce((n, g) => (n << 16n) | BigInt(g), 0n), width: 128 }
  return null
}

/**
 * TRUSTED_PROXIES as a test of an address: each entry an address or a CIDR block (`10.0.0.0/8`,
 * `fd00::/8`), IPv4 or IPv6, in any spelling `canonicalIp` reads (an IPv4-mapped entry is its IPv4).
 * Entries were compared as written: a block, or `::ffff:10.0.0.2`, trusted nothing, silently.
 * An entry that is neither throws, so a typo stops the start instead of trusting nothing.
 */
export function trustedProxies(list: string): (address: string) => boolean {
  const blocks = list
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)
    .map((entry) => {
      const [addr = '', len] = entry.split('/') as [string, string | undefined]
      const bits = bitsOf(addr)
      const prefix = len === undefined ? bits?.width : /^\d{1,3}$/.test(len) ? Number(len) : NaN
      if (!bits || prefix === undefined || !(prefix >= 0 && prefix <= bits.width)) throw new Error(`TRUSTED_PROXIES: ${JSON.stringify(entry)} is not an address or a CIDR block`)
      const shift = BigInt(bits.width - prefix)
      return { width: bits.width, shift, net: bits.value >> shift }
    })
  if (blocks.length === 0) return () => false
  return (address) => {
    const bits = bitsOf(address)
    return bits !== null && blocks.some((b) => b.width === bits.width && bits.value >> b.shift === b.net)
  }
}

/** 127.0.0.0/8 or ::1, in any spelling `canonicalIp` reads: a client on this very machine. */
export function isLoopbackAddress(address: string): boolean {
  const a = canonicalIp(address)
  if (isIPv4(a)) return a.startsWith('127.')
  return isIPv6(a) && groupsOf(a).every((g, i) => g === (i === 7 ? 1 : 0))
}

/** The identity the per-IP limit counts: an IPv4 address, or an IPv6 address's /64. */
export function rateKeyOf(address: string): string {
  const a = canonicalIp(address)
  return isIPv6(a) ? `${prefix64(a)}::/64` : a
}
