/** Shared steps of the vault tests: a master key, a link, its code, the stored row. */
import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import type { TestApp } from './harness'

export const newMasterKey = () => randomBytes(32).toString('base64')

/** Env for a test app with the vault on; pages are anonymous, so the per-IP limit is lifted. */
export const vaultEnv = (masterKey = newMasterKey()) => ({ VAULT_MASTER_KEY: masterKey, RATE_LIMIT_PER_IP: '100000', RATE_LIMIT_PER_TOKEN: '100000' })

export const codeOf = (url: string) => new URL(url).pathname.split('/').at(-1)!

export async function newLink(t: TestApp, token: string, provider = 'fakebyok'): Promise<string> {
  const r = await t.req('POST', '/v1/keys/link', { token, body: { provider } })
  if (r.status !== 201) throw new Error(`link failed: ${r.status} ${r.text}`)
  return codeOf(r.body.url)
}

/** Submits a key as a browser form would. */
export function submitForm(t: TestApp, code: string, key: string, headers: Record<string, string> = {}) {
  return t.req('POST', `/vault/${code}`, {
    body: new URLSearchParams({ key }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html', ...headers },
  })
}

export async function vaultKey(t: TestApp, token: string, key: string, provider = 'fakebyok'): Promise<void> {
  const r = await submitForm(t, await newLink(t, token, provider), key)
  if (r.status !== 200) throw new Error(`store failed: ${r.status} ${r.text}`)
}

export interface VaultRow {
  account_id: string
  provider: string
  ciphertext: Buffer
  nonce: Buffer
  wrapped_dek: Buffer
  dek_nonce: Buffer
  master_key_id: string
  last4: string
}

/** Direct Postgres access for the assertions that only the stored row can answer. */
export function vaultDb(t: TestApp) {
  const sql = postgres(t.db.url, { max: 1, onnotice: () => {} })
  return {
    sql,
    async rows(accountId: string): Promise<VaultRow[]> {
      return sql<VaultRow[]>`SELECT * FROM vault_keys WHERE account_id = ${accountId} ORDER BY provider`
    },
    close: () => sql.end(),
  }
}
