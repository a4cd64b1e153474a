/**
 * Envelope encryption of vaulted provider keys (docs/api.md §6). Each stored key gets its own random
 * 256-bit data key (DEK) and 96-bit nonce; the DEK is wrapped by the master key
 * (VAULT_MASTER_KEY), so rotating the master key re-wraps 32-byte DEKs and never touches the
 * provider keys themselves. Both layers are AES-256-GCM and bind the row's account and provider
 * as associated data: a ciphertext copied onto another account's or provider's row fails
 * authentication instead of handing one account's key to another.
 * errors: KEY_UNREADABLE (tampered row, wrong master key).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'
import { ApiError } from '../errors'

const ALG = 'aes-256-gcm'
const NONCE_BYTES = 12
const TAG_BYTES = 16

export interface MasterKey {
  /** First 8 hex of the key's SHA-256: tells rotation which master key wrapped a row. */
  id: string
  key: Buffer
}

/** The ciphertext columns of one vault row. `ciphertext` and `wrappedDek` carry their GCM tag at the end. */
export interface Sealed {
  ciphertext: Buffer
  nonce: Buffer
  wrappedDek: Buffer
  dekNonce: Buffer
  masterKeyId: string
}

/** Whose key this is: the associated data of both layers, and the context of KEY_UNREADABLE. */
export interface Binding {
  accountId: string
  provider: string
}

export function masterKeyFrom(base64: string): MasterKey {
  const key = Buffer.from(base64, 'base64')
  if (key.length !== 32) throw new Error('a vault master key is 32 bytes, base64-encoded')
  return { id: masterKeyId(key), key }
}

export function masterKeyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8)
}

export function seal(master: MasterKey, plaintext: string, b: Binding): Sealed {
  const dek = randomBytes(32)
  try {
    const { out: ciphertext, nonce } = encrypt(dek, Buffer.from(plaintext, 'utf8'), aad('key', b))
    const { out: wrappedDek, nonce: dekNonce } = encrypt(master.key, dek, aad('dek', b))
    return { ciphertext, nonce, wrappedDek, dekNonce, masterKeyId: master.id }
  } finally {
    dek.fill(0)
  }
}

export function open(master: MasterKey, s: Sealed, b: Binding): string {
  const dek = unwrap(master, s, b)
  try {
    return decrypt(dek, s.ciphertext, s.nonce, aad('key', b), b).toString('utf8')
  } finally {
    dek.fill(0)
  }
}

/** The same DEK under another master key (fresh nonce); the provider key is never decrypted. */
export function rewrap(from: MasterKey, to: MasterKey, s: Sealed, b: Binding): Pick<Sealed, 'wrappedDek' | 'dekNonce' | 'masterKeyId'> {
  const dek = unwrap(from, s, b)
  try {
    const { out: wrappedDek, nonce: dekNonce } = encrypt(to.key, dek, aad('dek', b))
    return { wrappedDek, dekNonce, masterKeyId: to.id }
  } finally {
    dek.fill(0)
  }
}

function unwrap(master: MasterKey, s: Sealed, b: Binding): Buffer {
  // A row wrapped by another master key cannot authenticate; say so before trying.
  if (s.masterKeyId !== master.id) throw unreadable(b)
  const dek = decrypt(master.key, s.wrappedDek, s.dekNonce, aad('dek', b), b)
  if (dek.length !== 32) throw unreadable(b)
  return dek
}

function aad(layer: 'key' | 'dek', b: Binding): Buffer {
  return Buffer.from(JSON.stringify(['pab-vault-v1', layer, b.accountId, b.provider]))
}

function encrypt(key: Buffer, plaintext: Buffer, ad: Buffer): { out: Buffer; nonce: Buffer } {
  const nonce = randomBytes(NONCE_BYTES)
  const c = createCipheriv(ALG, key, nonce, { authTagLength: TAG_BYTES })
  c.setAAD(ad)
  const out = Buffer.concat([c.update(plaintext), c.final(), c.getAuthTag()])
  return { out, nonce }
}

function decrypt(key: Buffer, sealed: Buffer, nonce: Buffer, ad: Buffer, b: Binding): Buffer {
  if (nonce.length !== NONCE_BYTES || sealed.length < TAG_BYTES) throw unreadable(b)
  try {
    const d = createDecipheriv(ALG, key, nonce, { authTagLength: TAG_BYTES })
    d.setAAD(ad)
    d.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES))
    return Buffer.concat([d.update(sealed.subarray(0, sealed.length - TAG_BYTES)), d.final()])
  } catch {
    throw unreadable(b)
  }
}

function unreadable(b: Binding): ApiError {
  return new ApiError('KEY_UNREADABLE', { provider: b.provider, link_via: 'POST /v1/keys/link' })
}
