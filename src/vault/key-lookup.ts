/**
 * The caller's vaulted provider key (bring-your-own-key), or null when the account has none.
 * Throws KEY_UNREADABLE when a stored key fails to decrypt.
 */
export type KeyLookup = (accountId: string, providerId: string) => Promise<string | null>
