/**
 * The end-user id a house-key request carries to the provider (docs/api.md §12, docs/house-lane.md),
 * written into a metered body by forwardedBody (request.ts) on the proxy and on a metered capability.
 */
import { createHmac } from 'node:crypto'

/**
 * The account's end-user id on the house lane (docs/api.md §12): `pab_` + 32 hex digits of
 * HMAC-SHA256(secret, account id). Stable per account, unlinkable across deployments, and it names
 * no account id to the provider.
 */
export function endUserId(secret: string, accountId: string): string {
  if (secret !== cachedFor) {
    cache.clear()
    cachedFor = secret
  }
  let id = cache.get(accountId)
  if (id === undefined) {
    id = 'pab_' + createHmac('sha256', secret).update(accountId).digest('hex').slice(0, 32)
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!)
    cache.set(accountId, id)
  }
  return id
}

/** An HMAC per request was ~1% of a metered proxied request's CPU (bench profile); an id never changes. */
const CACHE_MAX = 100_000
const cache = new Map<string, string>()
let cachedFor: string | null = null
