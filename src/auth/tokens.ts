/**
 * Token format (docs/api.md §2): `sk_` (owner) or `ak_` (agent) + 43 base64url chars = 256 random
 * bits. Only the SHA-256 is stored; a token is shown once.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

export type TokenKind = 'owner' | 'agent'

const PREFIX: Record<TokenKind, string> = { owner: 'sk_', agent: 'ak_' }
export const TOKEN_RE = /^(sk|ak)_[A-Za-z0-9_-]{43}$/

export function newToken(kind: TokenKind): string {
  return PREFIX[kind] + randomBytes(32).toString('base64url')
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex')
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
