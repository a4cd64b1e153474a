import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { startTestApp, type TestApp } from '../helpers/harness'
import { codeOf, newLink, submitForm, vaultDb, vaultEnv, vaultKey } from '../helpers/vault'

let t: TestApp
let db: ReturnType<typeof vaultDb>
beforeAll(async () => {
  t = await startTestApp({ env: vaultEnv() })
  db = vaultDb(t)
})
afterAll(async () => {
  await db.close()
  await t.close()
})

/** Every value under the test's Redis prefix, as text. */
async function redisDump(): Promise<{ keys: string[]; text: string }> {
  const keys: string[] = []
  let cursor = '0'
  do {
    const [next, batch] = await t.redis.scan(cursor, 'MATCH', `${t.prefix}:*`, 'COUNT', 1000)
    cursor = next
    keys.push(...batch)
  } while (cursor !== '0')
  const parts: string[] = []
  for (const k of keys) {
    const type = await t.redis.type(k)
    if (type === 'string') parts.push((await t.redis.get(k)) ?? '')
    else if (type === 'hash') parts.push(JSON.stringify(await t.redis.hgetall(k)))
    else if (type === 'stream') parts.push(JSON.stringify(await t.redis.xrange(k, '-', '+')))
    else if (type === 'list') parts.push(JSON.stringify(await t.redis.lrange(k, 0, -1)))
    else if (type === 'set') parts.push(JSON.stringify(await t.redis.smembers(k)))
    else if (type === 'zset') parts.push(JSON.stringify(await t.redis.zrange(k, 0, -1)))
  }
  return { keys, text: parts.join('\n') }
}

describe('a tampered or misplaced row is never used', () => {
  test('a flipped ciphertext byte → KEY_UNREADABLE on the byok call, nothing charged, nothing sent', async () => {
    const a = await t.signup()
    await vaultKey(t, a.token, 'sk-will-be-tampered-TAMP')
    await db.sql`UPDATE vault_keys SET ciphertext = set_byte(ciphertext, 0, get_byte(ciphertext, 0) # 1) WHERE account_id = ${a.account_id}`
    const sent = t.fake.seen.length
    const r = await t.req('POST', '/v1/call/test.byok', { token: a.token, body: {} })
    expect(r.status).toBe(500)
    expect(r.body).toMatchObject({ error: 'KEY_UNREADABLE', provider: 'fakebyok', link_via: 'POST /v1/keys/link' })
    expect(t.fake.seen.length).toBe(sent)
    expect((await t.req('GET', '/v1/balance', { token: a.token })).body.balance).toBe(500)
    // The remedy works: re-vaulting through a fresh link replaces the broken row.
    await vaultKey(t, a.token, 'sk-revaulted-after-tamper-NEWK')
    expect((await t.req('POST', '/v1/call/test.byok', { token: a.token, body: {} })).status).toBe(200)
  })

  test('a flipped wrapped data key → KEY_UNREADABLE', async () => {
    const a = await t.signup()
    await vaultKey(t, a.token, 'sk-wrapped-dek-tampered-WDEK')
    await db.sql`UPDATE vault_keys SET wrapped_dek = set_byte(wrapped_dek, 5, get_byte(wrapped_dek, 5) # 128) WHERE account_id = ${a.account_id}`
    const r = await t.req('POST', '/v1/call/test.byok', { token: a.token, body: {} })
    expect(r.status).toBe(500)
    expect(r.body.error).toBe('KEY_UNREADABLE')
  })

  test("a row copied onto another account does not decrypt there (the account is bound into the ciphertext)", async () => {
    const victim = await t.signup()
    const thief = await t.signup()
    await vaultKey(t, victim.token, 'sk-victim-secret-VICT')
    await db.sql`INSERT INTO vault_keys (account_id, provider, ciphertext, nonce, wrapped_dek, dek_nonce, master_key_id, last4, created_at)
      SELECT ${thief.account_id}, provider, ciphertext, nonce, wrapped_dek, dek_nonce, master_key_id, last4, created_at
      FROM vault_keys WHERE account_id = ${victim.account_id}`
    const sent = t.fake.seen.length
    const r = await t.req('POST', '/v1/call/test.byok', { token: thief.token, body: {} })
    expect(r.status).toBe(500)
    expect(r.body.error).toBe('KEY_UNREADABLE')
    expect(t.fake.seen.length).toBe(sent)
  })
})

describe('one account never sees another account’s key or link', () => {
  test("B does not list, delete or call with A's key", async () => {
    const a = await t.signup()
    const b = await t.signup()
    await vaultKey(t, a.token, 'sk-belongs-to-a-AAAA')
    expect((await t.req('GET', '/v1/keys', { token: b.token })).body).toEqual({ keys: [] })
    const del = await t.req('DELETE', '/v1/keys/fakebyok', { token: b.token })
    expect(del.status).toBe(404)
    expect(del.body.error).toBe('NOT_FOUND')
    const call = await t.req('POST', '/v1/call/test.byok', { token: b.token, body: {} })
    expect(call.status).toBe(402)
    expect(call.body.error).toBe('BYOK_REQUIRED')
    expect((await t.req('GET', '/v1/keys', { token: a.token })).body.keys).toHaveLength(1)
  })

  test("a key pasted into A's link lands in A's vault only, whoever opens the link", async () => {
    const a = await t.signup()
    const b = await t.signup()
    const code = await newLink(t, a.token)
    // B holding A's link (and B's own bearer) changes nothing: the link carries the account.
    const r = await t.req('POST', `/vault/${code}`, { token: b.token, body: { key: 'sk-pasted-into-a-link-PAST' }, headers: { accept: 'application/json' } })
    expect(r.status).toBe(200)
    expect((await t.req('GET', '/v1/keys', { token: b.token })).body.keys).toEqual([])
    expect((await t.req('GET', '/v1/keys', { token: a.token })).body.keys[0].last4).toBe('PAST')
    expect((await t.req('DELETE', '/v1/keys/fakebyok', { token: b.token })).status).toBe(404)
  })
})

describe('secrets stay secret', () => {
  test('Redis holds only the SHA-256 of a link code; neither Redis nor Postgres holds the key in clear', async () => {
    const a = await t.signup()
    const r = await t.req('POST', '/v1/keys/link', { token: a.token, body: { provider: 'fakebyok' } })
    const code = codeOf(r.body.url)
    const key = 'sk-never-in-clear-CLR1'
    expect((await submitForm(t, code, key)).status).toBe(200)
    const dump = await redisDump()
    expect(dump.keys.join('\n')).not.toContain(code)
    expect(dump.text).not.toContain(code)
    expect(dump.text).not.toContain(key)
    expect(dump.keys).toContain(`${t.prefix}:vlink:${createHash('sha256').update(code).digest('hex')}`)
    const [row] = await db.rows(a.account_id)
    for (const col of [row!.ciphertext, row!.wrapped_dek, row!.nonce, row!.dek_nonce]) expect(col.includes(Buffer.from(key))).toBe(false)
    const all = await db.sql`SELECT string_agg(t::text, '|') AS s FROM vault_keys t`
    expect(String(all[0]!.s)).not.toContain(key)
  })

  test('the pages run no script and load nothing from elsewhere', async () => {
    const a = await t.signup()
    const code = await newLink(t, a.token)
    const pages = [
      await t.req('GET', `/vault/${code}`, { headers: { accept: 'text/html' } }),
      await submitForm(t, code, 'sk-page-check-PAGE'),
      await t.req('GET', `/vault/${code}`, { headers: { accept: 'text/html' } }),
    ]
    for (const p of pages) {
      expect(p.text).not.toMatch(/<script|<link|<img|<iframe|\bsrc=|\bhref=|https?:\/\//i)
      const csp = p.headers.get('content-security-policy') ?? ''
      expect(csp).toContain("default-src 'none'")
      expect(csp).not.toContain('script-src')
      expect(p.headers.get('referrer-policy')).toBe('no-referrer')
      expect(p.headers.get('cache-control')).toBe('no-store')
    }
  })

  test('an e-mail is escaped on the page', async () => {
    const a = await t.signup()
    await t.redis.hset(t.s.ctx.keys.account(a.account_id), 'email', '"><b>x</b>@example.com')
    const page = await t.req('GET', `/vault/${await newLink(t, a.token)}`, { headers: { accept: 'text/html' } })
    expect(page.status).toBe(200)
    expect(page.text).not.toContain('<b>x</b>')
    expect(page.text).toContain('&#34;&#62;&#60;b&#62;x&#60;/b&#62;@example.com')
  })
})
