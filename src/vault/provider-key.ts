/**
 * The one rule for which provider key a paid request goes out with, read past its debit by the paid
 * call and the proxy alike:
 *   - a byok target (a capability of the byok lane, any route of a `byok` provider) takes only the
 *     caller's vaulted key; none → BYOK_REQUIRED (capability) / VAULT_KEY_MISSING (proxy);
 *   - a proxy route of any other provider takes the caller's vaulted key first, else the house key;
 *   - a house or free capability takes the house key: its price is set for that key.
 *
 * The vault reads Postgres, which a house-key proxy route would pay on every request (measured: it
 * more than halved the proxy's throughput). So a "no vaulted key" answer for such a route is
 * remembered for ABSENT_TTL_MS per account and provider; found keys never are, so a key deleted or
 * replaced stops being used at once, on every instance.
 *
 * Postgres being down never hangs a request (docs/api.md §6): a route with a house key falls back to it
 * after FALLBACK_AFTER_MS (logged, not cached); a byok target has no other key and is refused with
 * VAULT_UNAVAILABLE (503) after GIVE_UP_AFTER_MS, its debit refunded by the caller's void.
 * errors: BYOK_REQUIRED, VAULT_KEY_MISSING, VAULT_UNAVAILABLE, API_UNAVAILABLE (no house key),
 *         KEY_UNREADABLE (from the vault).
 */
import type { Capability, Provider } from '../catalog/catalog'
import { ApiError } from '../errors'
import type { Log } from '../log'
import type { KeyLookup } from './key-lookup'
import { lookupWithin, VAULT_UNAVAILABLE } from './deadline'

const ABSENT_TTL_MS = 2000
const FALLBACK_AFTER_MS = 500
const GIVE_UP_AFTER_MS = 3000
const MAX_ENTRIES = 100_000
/** What VAULT_UNAVAILABLE tells the caller to wait: a Postgres failover takes about this long. */
const RETRY_AFTER_S = 5

/** Where a key is needed: a capability of the catalog, or the proxy route of a provider. */
export type KeyTarget = { kind: 'capability'; capability: Capability; provider: Provider } | { kind: 'proxy'; provider: Provider }

type Source = 'vault_only' | 'vault_first' | 'house_only'

/**
 * A key and its lane: `house` (the provider's `key_env`) or `owner` (the account's vaulted key).
 * `vaultDown`: the house key stands in for a vault that did not answer, so the owner's key may exist.
 */
export interface LaneKey {
  key: string
  lane: 'house' | 'owner'
  vaultDown: boolean
}

function sourceOf(t: KeyTarget): Source {
  if (t.kind === 'capability') return t.capability.lane === 'byok' ? 'vault_only' : 'house_only'
  return t.provider.byok ? 'vault_only' : 'vault_first'
}

export class ProviderKeys {
  /** `${account}\n${provider}` → when the "no vaulted key" answer was read (performance.now()). */
  private absent = new Map<string, number>()

  constructor(
    /** Read on each lookup: the vault's lookup may be swapped in after boot (and is in tests). */
    private vaulted: () => KeyLookup,
    private log: Log,
  ) {}

  /**
   * The key when no lookup is needed (a house-lane capability with its house key), else undefined:
   * the common paid call takes it without the three promises of keyFor.
   */
  houseKeyNow(t: KeyTarget): string | undefined {
    return sourceOf(t) === 'house_only' && t.provider.houseKey ? t.provider.houseKey : undefined
  }

  async keyFor(t: KeyTarget, accountId: string): Promise<string> {
    return (await this.laneKeyFor(t, accountId)).key
  }

  /** The key, and which lane it puts the request on (docs/api.md §12): the house's or the owner's own. */
  async laneKeyFor(t: KeyTarget, accountId: string): Promise<LaneKey> {
    const { provider } = t
    const source = sourceOf(t)
    if (source === 'house_only') return { key: this.house(t), lane: 'house', vaultDown: false }
    if (source === 'vault_only') {
      const key = await lookupWithin(this.vaulted(), accountId, provider.id, GIVE_UP_AFTER_MS)
      if (key === VAULT_UNAVAILABLE) throw this.vaultDown(provider)
      if (key) return { key, lane: 'owner', vaultDown: false }
      if (t.kind === 'capability') throw new ApiError('BYOK_REQUIRED', { provider: provider.id, link_via: 'POST /v1/keys/link' })
      throw new ApiError('VAULT_KEY_MISSING', { provider: provider.id, link_via: 'POST /v1/keys/link' })
    }
    const id = `${accountId}\n${provider.id}`
    const seen = this.absent.get(id)
    if (seen === undefined || performance.now() - seen > ABSENT_TTL_MS) {
      const key = await lookupWithin(this.vaulted(), accountId, provider.id, provider.houseKey ? FALLBACK_AFTER_MS : GIVE_UP_AFTER_MS)
      if (key === VAULT_UNAVAILABLE) {
        if (!provider.houseKey) throw this.vaultDown(provider)
        this.log.warn('vault_unavailable', { provider: provider.id, fallback: 'house_key' })
        return { key: provider.houseKey, lane: 'house', vaultDown: true }
      }
      if (key) {
        this.absent.delete(id)
        return { key, lane: 'owner', vaultDown: false }
      }
      if (this.absent.size >= MAX_ENTRIES) this.absent.delete(this.absent.keys().next().value!)
      this.absent.set(id, performance.now())
    }
    return { key: this.house(t), lane: 'house', vaultDown: false }
  }

  /** VAULT_UNAVAILABLE for a provider whose vault did not answer in time. */
  vaultDown(provider: Provider): ApiError {
    this.log.warn('vault_unavailable', { provider: provider.id, fallback: 'none' })
    return new ApiError(
      'VAULT_UNAVAILABLE',
      { provider: provider.id, refunded: true, retry_after_s: RETRY_AFTER_S, status_url: '/status' },
      { 'retry-after': String(RETRY_AFTER_S) },
    )
  }

  /** The house key; a free capability may have none (its API takes no key). */
  private house(t: KeyTarget): string {
    if (t.provider.houseKey) return t.provider.houseKey
    if (t.kind === 'capability') {
      if (t.capability.lane === 'free') return ''
      throw new ApiError('API_UNAVAILABLE', { slug: t.capability.slug, capabilities_url: '/capabilities' })
    }
    throw new ApiError('API_UNAVAILABLE', { slug: `proxy:${t.provider.id}`, capabilities_url: '/capabilities' })
  }
}
