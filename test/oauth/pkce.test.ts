/** PKCE S256 against RFC 7636 Appendix B's worked example, and the verifier's grammar (§4.1). */
import { describe, expect, test } from 'bun:test'
import { CODE_CHALLENGE, CODE_VERIFIER, s256Challenge } from '../../src/oauth/pkce'

describe('PKCE S256 (RFC 7636)', () => {
  test('Appendix B: the verifier of the example hashes to its challenge', () => {
    const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'
    expect(s256Challenge(verifier)).toBe('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM')
    expect(CODE_VERIFIER.test(verifier)).toBe(true)
    expect(CODE_CHALLENGE.test(s256Challenge(verifier))).toBe(true)
  })

  test('a verifier is 43 to 128 unreserved characters', () => {
    expect(CODE_VERIFIER.test('a'.repeat(42))).toBe(false)
    expect(CODE_VERIFIER.test('a'.repeat(43))).toBe(true)
    expect(CODE_VERIFIER.test('a'.repeat(128))).toBe(true)
    expect(CODE_VERIFIER.test('a'.repeat(129))).toBe(false)
    expect(CODE_VERIFIER.test('a'.repeat(42) + '+')).toBe(false)
    expect(CODE_VERIFIER.test('A-._~' + 'z'.repeat(40))).toBe(true)
  })
})
