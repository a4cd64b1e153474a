/**
 * The house lane of the proxy (docs/api.md §12, docs/house-lane.md): the operator's own provider
 * key, shared by every signup, serves only what is priced or explicitly opened. A path is open on
 * it when it is a metered route, lies under `proxy.house.allow`, or lies under `proxy.house.owned`
 * (whose objects are then checked per account: house-objects.ts). Everything else is refused
 * before any debit, and no byte of it reaches the provider.
 * errors: BYOK_REQUIRED (the account could bring its own key), PROXY_UNKNOWN_PROVIDER (context
 *         `house_allow`: what the house key does serve).
 */
import type { Provider } from '../catalog/catalog'
import { ApiError } from '../errors'
import type { ProxyTarget } from './path'
import { parseAllowEntry, under } from '../catalog/house-paths'

/** Which rule opens a path on the house lane. */
export type HouseOpening = 'metered' | 'allowed' | 'owned'

/**
 * Which house rule opens this request, or null when the house key must not serve it. The path is
 * checked in both spellings, as sent and fully percent-decoded (path.ts; the metering rule): an
 * upstream may act on either, so both must lie under the opened prefix.
 */
export function houseOpening(provider: ProxyTarget['provider'], target: Pick<ProxyTarget, 'path' | 'decodedPath'>, method: string, metered: boolean): HouseOpening | null {
  if (metered) return 'metered'
  const house = provider.proxy.house
  if (!house) return null
  const both = (prefix: string) => under(target.path, prefix) && under(target.decodedPath, prefix)
  for (const entry of house.allow ?? []) {
    const a = parseAllowEntry(entry)
    if ((a.method === null || a.method === method) && both(a.prefix)) return 'allowed'
  }
  if (house.owned?.some(both)) return 'owned'
  return null
}

/** What the house key serves on a provider: its metered routes and its `allow` entries (the refusal's context). */
export function houseServes(provider: Provider): string[] {
  return [...(provider.proxy?.metered?.routes ?? []), ...(provider.proxy?.house?.allow ?? [])]
}

/**
 * The answer to a closed path on the house lane: with a vault on this deployment the account can
 * link its own key (which serves all of `proxy.paths`); without one the path simply is not served.
 */
export function houseRefusal(provider: Provider, vaultConfigured: boolean): ApiError {
  if (vaultConfigured) return new ApiError('BYOK_REQUIRED', { provider: provider.id, link_via: 'POST /v1/keys/link' })
  return new ApiError('PROXY_UNKNOWN_PROVIDER', { provider: provider.id, house_allow: houseServes(provider) })
}

