import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { newLink, submitForm, vaultDb, vaultEnv } from '../helpers/vault'

let t: TestApp
let db: ReturnType<typeof vaultDb>
const lines: string[] = []
const realLog = console.log
beforeAll(async () => {
  t = await startTestApp({ env: { ...vaultEnv(), LOG: 'json' } })
  db = vaultDb(t)
  console.log = (...a: unknown[]) => void lines.push(a.map(String).join(' '))
})
afterAll(async () => {
  console.log = realLog
  await db.close()
  await t.close()
})

describe('Postgres failing while a key is stored', () => {
  test('the human gets an error page, the link is given back, and the key is in no log line', async () => {
    const a = await t.signup()
    const code = await newLink(t, a.token)
    const key = 'sk-stored-during-outage-OUTG'
    await db.sql`ALTER TABLE vault_keys RENAME TO vault_keys_offline`
    let failed
    try {
      failed = await submitForm(t, code, key)
    } finally {
      await db.sql`ALTER TABLE vault_keys_offline RENAME TO vault_keys`
    }
    expect(failed.status).toBe(500)
    expect(failed.headers.get('content-type')).toStartWith('text/html')
    expect(failed.text).toContain('INTERNAL')
    expect(failed.text).not.toContain(key)

    // Not LINK_USED: the failed store released its claim.
    const retry = await submitForm(t, code, key)
    expect(retry.status).toBe(200)
    expect(retry.text).toContain('OUTG')
    expect((await submitForm(t, code, key)).status).toBe(409)

    expect(lines.some((l) => l.includes('vault_store_failed'))).toBe(true)
    expect(lines.some((l) => l.includes('vault_key_stored'))).toBe(true)
    expect(lines.join('\n')).not.toContain(key)
  })
})
