/**
 * The provider key of a proxied request: the caller's vaulted key first, else the house key; a
 * byok provider never falls back to the house key.
 *
 * The vault reads Postgres on every lookup, which a house-key route would pay on every request
 * (measured: it more than halved the proxy's throughput). So a "no vaulted key" answer is
 * remembered for ABSENT_TTL_MS per account and provider. Found keys are never cached — the vault's
 * rule stands: a key deleted or replaced stops being used at once, on every instance. The cost is
 * that a key vaulted meanwhile is picked up by a house-key route within the TTL rather than at once.
 *
 * Postgres being down never blocks calls (CONTRACT §6): when the vault cannot answer within
 * FALLBACK_AFTER_MS, a provider with a house key is served with it (logged, not cached). A byok
 * provider has no other key: after GIVE_UP_AFTER_MS its request fails (INTERNAL) rather than hang
 * while the database driver waits for a connection.
 * errors: VAULT_KEY_MISSING, API_UNAVAILABLE (no house key), KEY_UNREADABLE (from the vault).
 */
import { ApiError } from '../errors'
import type { Provider } from '../catalog/catalog'
import type { Log } from '../log'
import type { KeyLookup } from '../services'
import { lookupWithin, VAULT_UNAVAILABLE } from '../vault/deadline'

const ABSENT_TTL_MS = 2000
const FALLBACK_AFTER_MS = 500
const GIVE_UP_AFTER_MS = 3000
const MAX_ENTRIES = 100_000

export class ProviderKeys {
  /** `${account}\n${provider}` → when the "no vaulted key" answer was read (performance.now()). */
  private absent = new Map<string, number>()

  constructor(
    private vaulted: () => KeyLookup,
    private log: Log,
  ) {}

  async get(provider: Provider, accountId: string): Promise<string> {
    const id = `${accountId}\n${provider.id}`
    const seen = this.absent.get(id)
    if (seen === undefined || performance.now() - seen > ABSENT_TTL_MS) {
      const fallback = !provider.byok && provider.houseKey
      const key = await lookupWithin(this.vaulted(), accountId, provider.id, fallback ? FALLBACK_AFTER_MS : GIVE_UP_AFTER_MS)
      if (key === VAULT_UNAVAILABLE) {
        this.log.warn('vault_unavailable', { provider: provider.id, fallback: fallback ? 'house_key' : 'none' })
        if (!fallback) throw new Error('the key vault did not answer')
        return provider.houseKey!
      }
      if (key) {
        this.absent.delete(id)
        return key
      }
      if (this.absent.size >= MAX_ENTRIES) this.absent.delete(this.absent.keys().next().value!)
      this.absent.set(id, performance.now())
    }
    if (provider.byok) throw new ApiError('VAULT_KEY_MISSING', { provider: provider.id, link_via: 'POST /v1/keys/link' })
    if (!provider.houseKey) throw new ApiError('API_UNAVAILABLE', { slug: `proxy:${provider.id}`, capabilities_url: '/capabilities' })
    return provider.houseKey
  }
}
