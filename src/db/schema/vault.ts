import { customType, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core'

/** Raw bytes; drizzle 0.45 has no built-in bytea. PGlite hands back a Uint8Array, postgres-js a Buffer. */
const bytea = customType<{ data: Buffer; driverData: Buffer | Uint8Array }>({
  dataType: () => 'bytea',
  toDriver: (v) => v,
  fromDriver: (v) => Buffer.from(v),
})

/**
 * Vaulted provider keys (bring-your-own-key), envelope-encrypted by src/vault/crypto.ts. One key
 * per account and provider: a new store replaces the old row. Nothing here is readable without
 * the master key whose id is in `master_key_id`; `last4` is the only part ever shown.
 */
export const vaultKeys = pgTable(
  'vault_keys',
  {
    accountId: text('account_id').notNull(),
    provider: text('provider').notNull(),
    /** AES-256-GCM of the key under the row's data key, tag appended. */
    ciphertext: bytea('ciphertext').notNull(),
    nonce: bytea('nonce').notNull(),
    /** The data key, AES-256-GCM under the master key, tag appended. */
    wrappedDek: bytea('wrapped_dek').notNull(),
    dekNonce: bytea('dek_nonce').notNull(),
    masterKeyId: text('master_key_id').notNull(),
    last4: text('last4').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.provider] })],
)
