/**
 * A vault lookup with a deadline. The vault reads Postgres, and Postgres being down must never
 * hang a request (docs/api.md §6): past `ms`, or on a driver error, the answer is VAULT_UNAVAILABLE and
 * the caller decides (provider-key.ts: a house key when the target has one, else VAULT_UNAVAILABLE). The vault's own
 * errors (KEY_UNREADABLE) are answers and pass through.
 */
import { ApiError } from '../errors'
import type { KeyLookup } from './key-lookup'

export const VAULT_UNAVAILABLE: unique symbol = Symbol('vault unavailable')

export async function lookupWithin(
  lookup: KeyLookup,
  accountId: string,
  providerId: string,
  ms: number,
): Promise<string | null | typeof VAULT_UNAVAILABLE> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<typeof VAULT_UNAVAILABLE>((resolve) => (timer = setTimeout(() => resolve(VAULT_UNAVAILABLE), ms)))
  const answer = lookup(accountId, providerId).catch((e: unknown): typeof VAULT_UNAVAILABLE => {
    if (e instanceof ApiError) throw e
    return VAULT_UNAVAILABLE
  })
  try {
    return await Promise.race([answer, late])
  } finally {
    clearTimeout(timer)
  }
}
