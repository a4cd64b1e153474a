import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { startTestApp, type TestApp } from '../helpers/harness'
import { newMasterKey, vaultDb, vaultEnv, vaultKey } from '../helpers/vault'
import { masterKeyFrom } from '../../src/vault/crypto'
import { KeyVault } from '../../src/vault/store'

const ROOT = join(import.meta.dir, '..', '..')
const OLD = newMasterKey()
const NEW = newMasterKey()

let oldApp: TestApp
let db: ReturnType<typeof vaultDb>
const apps: TestApp[] = []
beforeAll(async () => {
  oldApp = await startTestApp({ env: vaultEnv(OLD) })
  db = vaultDb(oldApp)
})
afterAll(async () => {
  await db.close()
  for (const a of apps) await a.close()
  await oldApp.close()
})

/** The real command, as an operator runs it. */
async function rotate(env: Record<string, string>) {
  const p = Bun.spawn([process.execPath, 'run', 'vault:rotate'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: oldApp.db.url, ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  return { out, err, code }
}

describe('bun run vault:rotate', () => {
  test('re-wraps every data key under the new master key; the service then reads them with the new key only', async () => {
    const a = await oldApp.signup()
    const b = await oldApp.signup()
    await vaultKey(oldApp, a.token, 'sk-rotated-key-of-a-ROTA')
    await vaultKey(oldApp, b.token, 'sk-rotated-key-of-b-ROTB')
    const [before] = await db.rows(a.account_id)
    expect(before!.master_key_id).toBe(masterKeyFrom(OLD).id)

    const r = await rotate({ VAULT_MASTER_KEY: OLD, VAULT_NEW_MASTER_KEY: NEW })
    expect(r.err).not.toContain('vault:rotate:')
    expect(r.code).toBe(0)
    expect(r.out).toContain('2 key(s) re-wrapped')

    const [after] = await db.rows(a.account_id)
    expect(after!.master_key_id).toBe(masterKeyFrom(NEW).id)
    // Only the wrapping changed: the key's own ciphertext is untouched.
    expect(after!.ciphertext.equals(before!.ciphertext)).toBe(true)
    expect(after!.nonce.equals(before!.nonce)).toBe(true)
    expect(after!.wrapped_dek.equals(before!.wrapped_dek)).toBe(false)
    expect(after!.dek_nonce.equals(before!.dek_nonce)).toBe(false)

    // The same deployment restarted with the new key (same Redis prefix, same database).
    const newApp = await startTestApp({ env: vaultEnv(NEW), database: oldApp.db, prefix: oldApp.prefix })
    apps.push(newApp)
    for (const [acct, key] of [[a, 'sk-rotated-key-of-a-ROTA'], [b, 'sk-rotated-key-of-b-ROTB']] as const) {
      const call = await newApp.req('POST', '/v1/call/test.byok', { token: acct.token, body: {} })
      expect(call.status).toBe(200)
      expect(newApp.fake.seen.at(-1)!.headers['x-api-key']).toBe(key)
    }
    const stale = await oldApp.req('POST', '/v1/call/test.byok', { token: a.token, body: {} })
    expect(stale.status).toBe(500)
    expect(stale.body.error).toBe('KEY_UNREADABLE')
  })

  test('a second run changes nothing', async () => {
    const rows = await db.sql`SELECT account_id, wrapped_dek FROM vault_keys ORDER BY account_id`
    const r = await rotate({ VAULT_MASTER_KEY: OLD, VAULT_NEW_MASTER_KEY: NEW })
    expect(r.code).toBe(0)
    expect(r.out).toContain(`0 key(s) re-wrapped`)
    expect(r.out).toContain(`2 already under ${masterKeyFrom(NEW).id}`)
    expect(await db.sql`SELECT account_id, wrapped_dek FROM vault_keys ORDER BY account_id`).toEqual(rows)
  })

  test('a row under neither key aborts the whole run: nothing is half-rotated', async () => {
    const c = await oldApp.signup()
    const d = await oldApp.signup()
    await vaultKey(oldApp, c.token, 'sk-still-under-old-OLDK')
    await new KeyVault(oldApp.s.db.db, newMasterKey(), oldApp.clock).store(d.account_id, 'fakebyok', 'sk-under-a-stranger-STRG')
    const r = await rotate({ VAULT_MASTER_KEY: OLD, VAULT_NEW_MASTER_KEY: NEW })
    expect(r.code).toBe(1)
    expect(r.err).toContain(`${d.account_id}/fakebyok`)
    expect(r.err).toContain('nothing was changed')
    expect((await db.rows(c.account_id))[0]!.master_key_id).toBe(masterKeyFrom(OLD).id)
  })

  test('missing or malformed new key: exit 1 with the reason', async () => {
    const none = await rotate({ VAULT_MASTER_KEY: OLD, VAULT_NEW_MASTER_KEY: '' })
    expect(none.code).toBe(1)
    expect(none.err).toContain('VAULT_NEW_MASTER_KEY')
    const short = await rotate({ VAULT_MASTER_KEY: OLD, VAULT_NEW_MASTER_KEY: 'c2hvcnQ=' })
    expect(short.code).toBe(1)
    expect(short.err).toContain('32 bytes')
    const same = await rotate({ VAULT_MASTER_KEY: OLD, VAULT_NEW_MASTER_KEY: OLD })
    expect(same.code).toBe(1)
    expect(same.err).toContain('the old one')
  })
})

describe('rotation without a window: restart on the new key first (VAULT_PREVIOUS_MASTER_KEY), then rotate', () => {
  test('every byok call is served before, during and after; keys stored meanwhile end up under the new key', async () => {
    const OLD2 = newMasterKey()
    const NEW2 = newMasterKey()
    const before = await startTestApp({ env: vaultEnv(OLD2) })
    apps.push(before)
    const e = await before.signup()
    await vaultKey(before, e.token, 'sk-vaulted-before-EEEE')

    // The restarted deployment: writes under the new key, still reads rows the old one wrapped.
    const env = { ...vaultEnv(NEW2), VAULT_PREVIOUS_MASTER_KEY: OLD2 }
    const after = await startTestApp({ env, database: before.db, prefix: before.prefix })
    apps.unshift(after) // closed before `before`, which drops the database
    const byok = async (token: string, key: string) => {
      const call = await after.req('POST', '/v1/call/test.byok', { token, body: {} })
      expect([call.status, call.body.error]).toEqual([200, undefined])
      expect(after.fake.seen.at(-1)!.headers['x-api-key']).toBe(key)
    }
    await byok(e.token, 'sk-vaulted-before-EEEE')
    const f = await after.signup()
    await vaultKey(after, f.token, 'sk-vaulted-between-FFFF')
    const sql = vaultDb(after)
    try {
      expect((await sql.rows(f.account_id))[0]!.master_key_id).toBe(masterKeyFrom(NEW2).id)

      // The operator runs the command with the service's own env.
      const r = await rotate({ DATABASE_URL: after.db.url, ...env })
      expect(r.err).not.toContain('vault:rotate:')
      expect(r.code).toBe(0)
      expect(r.out).toContain('1 key(s) re-wrapped')
      for (const acct of [e, f]) expect((await sql.rows(acct.account_id))[0]!.master_key_id).toBe(masterKeyFrom(NEW2).id)
    } finally {
      await sql.close()
    }
    await byok(e.token, 'sk-vaulted-before-EEEE')
    await byok(f.token, 'sk-vaulted-between-FFFF')
  })

  test('a previous key that is not 32 bytes is refused by the config check, in the service and the command alike', async () => {
    const r = await rotate({ VAULT_MASTER_KEY: NEW, VAULT_PREVIOUS_MASTER_KEY: 'c2hvcnQ=' })
    expect(r.code).toBe(1)
    expect(r.err).toContain('VAULT_PREVIOUS_MASTER_KEY')
  })
})
