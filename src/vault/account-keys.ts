/**
 * Bring-your-own-key: the agent asks for a one-time link, the human opens it and pastes the key,
 * the key goes into the vault encrypted. The key is held in memory only between the form and the
 * encryption; it is never logged, never returned (only last4).
 * errors: NOT_CONFIGURED, BAD_REQUEST (unknown provider, malformed key), LINK_INVALID, LINK_USED,
 *         NOT_FOUND (DELETE of a key the account does not have).
 */
import { ApiError } from '../errors'
import type { Catalog } from '../catalog/catalog'
import type { Config } from '../config'
import type { DbHandle } from '../db/client'
import type { Log } from '../log'
import type { RedisContext } from '../redis/context'
import { KeyVault, type KeySummary } from './store'
import { claimLink, createLink, inspectLink, releaseLink } from './links'
import { readAccount } from '../redis/account-hash'

/** Provider keys are header values: printable ASCII, no spaces (so no header injection either). */
/** What the vault's routes use of the process's services. */
export interface VaultDeps {
  cfg: Config
  ctx: RedisContext
  db: DbHandle
  catalog: Catalog
  log: Log
}

const KEY_RE = /^[\x21-\x7e]{8,4096}$/

export function openVault(s: VaultDeps): KeyVault {
  return new KeyVault(s.db.db, s.cfg.VAULT_MASTER_KEY, s.ctx.clock, s.cfg.VAULT_PREVIOUS_MASTER_KEY)
}

export async function requestLink(s: VaultDeps, vault: KeyVault, accountId: string, provider: string) {
  vault.requireMaster()
  if (!s.catalog.providers.has(provider))
    throw new ApiError('BAD_REQUEST', { field: 'provider', expected: `one of ${[...s.catalog.providers.keys()].join(', ')}` })
  return createLink(s.ctx, accountId, provider)
}

export interface LinkView {
  provider: string
  email: string
  expiresAt: number
}

/** What the page shows before the key is pasted; does not use the link up. */
export async function viewLink(s: VaultDeps, vault: KeyVault, code: string): Promise<LinkView> {
  vault.requireMaster()
  const target = await inspectLink(s.ctx, code)
  return { provider: target.provider, email: await emailOf(s, target.accountId), expiresAt: target.expiresAt }
}

/**
 * `readKey` runs only once the link is known good: a dead link answers LINK_INVALID / LINK_USED
 * whatever was pasted, so the holder learns to ask for a new link rather than fix a key.
 */
export async function submitKey(s: VaultDeps, vault: KeyVault, code: string, readKey: () => Promise<unknown>): Promise<KeySummary & { email: string }> {
  vault.requireMaster()
  await inspectLink(s.ctx, code)
  const rawKey = await readKey()
  const key = typeof rawKey === 'string' ? rawKey.trim() : ''
  // Checked before the claim: a typo must not burn the link.
  if (!KEY_RE.test(key)) throw new ApiError('BAD_REQUEST', { field: 'key', expected: 'the provider key: 8 to 4096 printable characters without spaces' })
  const claim = await claimLink(s.ctx, code)
  let stored: KeySummary
  try {
    stored = await vault.store(claim.accountId, claim.provider, key)
  } catch (e) {
    await releaseLink(s.ctx, code, claim.claimId).catch(() => {})
    s.log.error('vault_store_failed', { account_id: claim.accountId, provider: claim.provider, error: e instanceof Error ? e.name : 'unknown' })
    throw e
  }
  s.log.info('vault_key_stored', { account_id: claim.accountId, provider: claim.provider })
  return { ...stored, email: await emailOf(s, claim.accountId) }
}

export async function deleteKey(vault: KeyVault, accountId: string, provider: string): Promise<void> {
  if (!(await vault.remove(accountId, provider))) throw new ApiError('NOT_FOUND', { resource: 'vaulted key' })
}

async function emailOf(s: VaultDeps, accountId: string): Promise<string> {
  return (await readAccount(s.ctx, accountId, 'email')).email ?? ''
}
