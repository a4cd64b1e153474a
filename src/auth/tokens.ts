/**
 * Token format (docs/api.md §2): `sk_` (owner) or `ak_` (agent) + 43 base64url chars = 256 random
 * bits. Only the SHA-256 is stored; a token is shown once.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto'

export type TokenKind = 'owner' | 'agent'

const PREFIX: Record<TokenKind, string> = { owner: 'sk_', agent: 'ak_' }
export const TOKEN_RE = /^(sk|ak)_[A-Za-z0-9_-]{43}$/

export function newToken(kind: TokenKind): string {
  return PREFIX[kind] + randomBytes(32).toString('base64url')
}

/** Bun's one-shot SHA-256: the same digest as node:crypto's createHash, at a third of its cost per request. */
export function hashToken(token: string): string {
  return Bun.SHA256.hash(token, 'hex')
}

/** Constant-time comparison of two hex digests. */
export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex')
  const y = Buffer.from(b, 'hex')
  return x.length === y.length && timingSafeEqual(x, y)
}

/** Short random ids for accounts, agents, calls: 128 bits, url-safe. */
export function randomId(bytes = 16): string {
  return randomBytes(bytes).toString('base64url')
}

const POOL_BYTES = 4096
let pool = Buffer.alloc(0)
let used = 0

/**
 * randomId for the ids every request mints (its request id, a paid call's id), cut from a pool the
 * CSPRNG refills 4 KiB at a time, as node's randomUUID does: a randomBytes call each cost ~1 µs.
 * Not for secrets (codes, tokens): those keep randomId, whose bytes never sit in a pool.
 */
export function pooledId(bytes = 16): string {
  if (used + bytes > pool.length) {
    pool = randomBytes(POOL_BYTES)
    used = 0
  }
  used += bytes
  return pool.toString('base64url', used - bytes, used)
}

/** Base-64 digits in ASCII order (base64url's characters): a number's digits compare byte by byte as it does. */
const SORTABLE = '-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz'

/**
 * A pooledId led by its time: 8 characters of epoch ms (SORTABLE: ids minted later sort later, byte
 * by byte, for the next ~8,900 years), then 10 random bytes (14 characters, base64url): 22 characters,
 * as pooledId's. A paid call's id leads the primary keys of its Postgres rows (`calls`, and its ledger
 * entries' `<call id>:debit`), so each insert lands at the right edge of the index instead of on a
 * random page (bench/RESULTS.md, issue 42). ~0.3 µs a call (~0.15 of it the time digits).
 */
export function timeLedId(ms: number): string {
  let t = Math.floor(ms)
  let head = ''
  for (let i = 0; i < 8; i++) {
    head = SORTABLE[t % 64]! + head
    t = Math.floor(t / 64)
  }
  return head + pooledId(10)
}
