/**
 * Whether an IP address is one a webhook must never reach: every block of the IANA IPv4 and IPv6
 * Special-Purpose Address Registries (private, loopback, link-local, shared, benchmarking,
 * documentation, translation and tunnelling prefixes), multicast and reserved space. Translation
 * and tunnelling prefixes (NAT64, 6to4, Teredo, IPv4-compatible) are refused whole: the IPv4
 * address they carry could be anything, and the gateway that unwraps it may sit on our network.
 * An IPv4-mapped IPv6 address is judged by the IPv4 address it maps.
 */
import { isIP } from 'node:net'

type Block = [bytes: number[], prefix: number]

const V4: Block[] = [
  '0.0.0.0/8', // "this network"
  '10.0.0.0/8', // private
  '100.64.0.0/10', // shared address space (carrier-grade NAT)
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local (cloud metadata services)
  '172.16.0.0/12', // private
  '192.0.0.0/24', // IETF protocol assignments
  '192.0.2.0/24', // documentation
  '192.88.99.0/24', // 6to4 relay anycast
  '192.168.0.0/16', // private
  '198.18.0.0/15', // benchmarking
  '198.51.100.0/24', // documentation
  '203.0.113.0/24', // documentation
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, and 255.255.255.255 (limited broadcast)
].map((c) => block(c, 4))

/** Inside 2000::/3, the only space allocated as global unicast; everything outside it is refused anyway. */
const V6: Block[] = [
  '2001::/23', // IETF protocol assignments, Teredo (2001::/32) among them
  '2001:db8::/32', // documentation
  '2002::/16', // 6to4
  '2620:4f:8000::/48', // AS112 DNS sinks
  '3fff::/20', // documentation
].map((c) => block(c, 6))

/**
 * Outside global unicast, named for the reader: ::/128, ::1, IPv4-compatible ::/96, NAT64
 * 64:ff9b::/96 and 64:ff9b:1::/48, discard-only 100::/64, SRv6 5f00::/16, unique-local fc00::/7,
 * link-local fe80::/10, site-local fec0::/10, multicast ff00::/8.
 */
const GLOBAL_UNICAST = block('2000::/3', 6)
const MAPPED_V4 = block('::ffff:0:0/96', 6)

/** `ip` is an address literal: no brackets, no zone id (endpoint-url.ts normalises hosts first). */
export function isSpecialAddress(ip: string): boolean {
  const v = isIP(ip)
  if (v === 4) return V4.some((b) => inBlock(v4Bytes(ip), b))
  if (v === 6) {
    const bytes = v6Bytes(ip)
    if (inBlock(bytes, MAPPED_V4)) return V4.some((b) => inBlock(bytes.slice(12), b))
    return !inBlock(bytes, GLOBAL_UNICAST) || V6.some((b) => inBlock(bytes, b))
  }
  // Not an address at all: the caller should not have asked; refusing is the safe answer.
  return true
}

function block(cidr: string, family: 4 | 6): Block {
  const [addr, len] = cidr.split('/') as [string, string]
  return [family === 4 ? v4Bytes(addr) : v6Bytes(addr), Number(len)]
}

function inBlock(bytes: number[], [net, prefix]: Block): boolean {
  if (bytes.length !== net.length) return false
  for (let bit = 0; bit < prefix; bit += 8) {
    const i = bit / 8
    const mask = prefix - bit >= 8 ? 0xff : (0xff << (8 - (prefix - bit))) & 0xff
    if ((bytes[i]! & mask) !== (net[i]! & mask)) return false
  }
  return true
}

function v4Bytes(ip: string): number[] {
  return ip.split('.').map(Number)
}

/** 16 bytes of a valid IPv6 literal (node's isIP said so), `::` and a dotted IPv4 tail expanded. */
function v6Bytes(ip: string): number[] {
  let text = ip
  const tail: number[] = []
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (dotted) {
    tail.push(...v4Bytes(dotted[1]!))
    text = text.slice(0, -dotted[1]!.length) + '0:0'
  }
  const [head, rest] = text.includes('::') ? (text.split('::') as [string, string]) : [text, null]
  const groups = (s: string) => (s ? s.split(':').map((g) => parseInt(g, 16)) : [])
  const h = groups(head)
  const r = rest === null ? [] : groups(rest)
  const words = [...h, ...Array(8 - h.length - r.length).fill(0), ...r]
  const bytes = words.flatMap((w) => [w >> 8, w & 0xff])
  if (tail.length) bytes.splice(12, 4, ...tail)
  return bytes
}
