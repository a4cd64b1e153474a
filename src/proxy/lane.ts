/**
 * Which lane a proxied request is on (docs/api.md §12), decided before any money moves: the owner's
 * lane when the account's vaulted key is used (a `byok` provider always; another provider when the
 * account has one), else the house lane (the provider's `key_env`). The lane prices the request,
 * so the key is read before the debit, by provider-key.ts's rules (its absent-cache, the house-key
 * fallback while the vault is down, VAULT_KEY_MISSING for a byok provider without a key).
 * errors: VAULT_KEY_MISSING, VAULT_UNAVAILABLE, API_UNAVAILABLE (no house key), KEY_UNREADABLE.
 */
import type { Provider } from '../catalog/catalog'
import type { LaneKey, ProviderKeys } from '../vault/provider-key'

export type { LaneKey }

export function resolveLane(keys: ProviderKeys, provider: Provider, accountId: string): Promise<LaneKey> {
  return keys.laneKeyFor({ kind: 'proxy', provider }, accountId)
}
