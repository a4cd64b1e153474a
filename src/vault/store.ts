/**
 * The key vault over Postgres: store (replacing the account's previous key for the provider),
 * list (last4 only), remove, and the lookup the byok call path and the proxy use.
 * Nothing here logs or returns a key except `lookup`, whose caller injects it into one upstream
 * request. Deliberately uncached: a key deleted or replaced on one instance must stop being used
 * on every instance at once.
 * During a master-key rotation the vault also holds the previous master key: rows it wrapped are
 * still read, while every store wraps under the current one (see scripts/vault-rotate.ts).
 * errors: NOT_CONFIGURED (no VAULT_MASTER_KEY), KEY_UNREADABLE (row fails authentication).
 */
import { and, asc, eq } from 'drizzle-orm'
import type { Clock } from '../clock'
import type { Database } from '../db/client'
import { vaultKeys } from '../db/schema'
import { notConfigured } from '../alarms/not-configured'
import { masterKeyFrom, open, seal, type MasterKey } from './crypto'

export interface KeySummary {
  provider: string
  last4: string
  created_at: string
}

export class KeyVault {
  private master: MasterKey | null
  private previous: MasterKey | null

  constructor(
    private db: Database,
    masterKeyBase64: string | undefined,
    private clock: Clock,
    previousMasterKeyBase64?: string,
  ) {
    this.master = masterKeyBase64 ? masterKeyFrom(masterKeyBase64) : null
    this.previous = previousMasterKeyBase64 ? masterKeyFrom(previousMasterKeyBase64) : null
  }

  get configured(): boolean {
    return this.master !== null
  }

  /** Every vault surface answers NOT_CONFIGURED on a deployment without a master key. */
  requireMaster(): MasterKey {
    if (!this.master) throw notConfigured('vault')
    return this.master
  }

  async store(accountId: string, provider: string, key: string): Promise<KeySummary> {
    const sealed = seal(this.requireMaster(), key, { accountId, provider })
    const row = { ...sealed, last4: key.slice(-4), createdAt: new Date(this.clock.now()) }
    await this.db
      .insert(vaultKeys)
      .values({ accountId, provider, ...row })
      .onConflictDoUpdate({ target: [vaultKeys.accountId, vaultKeys.provider], set: row })
    return { provider, last4: row.last4, created_at: row.createdAt.toISOString() }
  }

  async list(accountId: string): Promise<KeySummary[]> {
    this.requireMaster()
    const rows = await this.db
      .select({ provider: vaultKeys.provider, last4: vaultKeys.last4, createdAt: vaultKeys.createdAt })
      .from(vaultKeys)
      .where(eq(vaultKeys.accountId, accountId))
      .orderBy(asc(vaultKeys.provider))
    return rows.map((r) => ({ provider: r.provider, last4: r.last4, created_at: r.createdAt.toISOString() }))
  }

  /** false when the account has no key for the provider. */
  async remove(accountId: string, provider: string): Promise<boolean> {
    this.requireMaster()
    const gone = await this.db
      .delete(vaultKeys)
      .where(and(eq(vaultKeys.accountId, accountId), eq(vaultKeys.provider, provider)))
      .returning({ provider: vaultKeys.provider })
    return gone.length > 0
  }

  /**
   * The decrypted key, or null when the account has none. Without a master key an account with
   * no row still gets null (so a house-key proxy route is unaffected), but a stored row cannot be
   * read: NOT_CONFIGURED rather than a misleading "no key".
   */
  async lookup(accountId: string, provider: string): Promise<string | null> {
    const [row] = await this.db
      .select()
      .from(vaultKeys)
      .where(and(eq(vaultKeys.accountId, accountId), eq(vaultKeys.provider, provider)))
      .limit(1)
    if (!row) return null
    const master = this.requireMaster()
    return open(this.previous?.id === row.masterKeyId ? this.previous : master, row, { accountId, provider })
  }
}
