/**
 * Holds the service's read of a caller's vaulted key (the step after the debit and before the
 * upstream request) until released: a test can make the client go away right there.
 */
import type { TestApp } from './harness'

export function holdKeyRead(t: TestApp, key = 'byok-key-of-the-caller') {
  const real = t.s.vaultedKey
  const { promise: reached, resolve: reach } = Promise.withResolvers<void>()
  const { promise: go, resolve: release } = Promise.withResolvers<void>()
  t.s.vaultedKey = async () => {
    reach()
    await go
    return key
  }
  return {
    /** Resolves once a request is waiting for its key. */
    reached,
    /** Lets the waiting request (and every later one) have its key. */
    release: () => release(),
    /** Puts the real key read back. */
    restore: () => {
      t.s.vaultedKey = real
    },
  }
}
