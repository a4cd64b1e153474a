/**
 * PKCE (RFC 7636) with the one method we take, S256: the challenge is BASE64URL(SHA-256(verifier)).
 * Checked against RFC 7636 Appendix B's example in test/oauth/pkce.test.ts.
 */
import { createHash } from 'node:crypto'

/** RFC 7636 §4.1: 43–128 characters of the unreserved set. */
export const CODE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/
/** A S256 challenge: 32 bytes in base64url without padding. */
export const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/

export function s256Challenge(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url')
}
