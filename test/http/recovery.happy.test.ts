/**
 * A lost owner token recovered by e-mail: POST /v1/token/rotate {email} → 202 → an .eml with a
 * one-time /rotate?code= link → a confirm page → its POST shows a new owner token once; the old
 * token is dead.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { get, pathOf, postForm, readMails } from '../helpers/money'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

function linkIn(text: string): string {
  const m = /(http:\/\/pab\.test\/rotate\?code=[A-Za-z0-9_-]{43})/.exec(text)
  if (!m) throw new Error(`no rotate link in mail:\n${text}`)
  return m[1]!
}

describe('token recovery by e-mail', () => {
  test('the mailed link shows a new owner token once and kills the old one', async () => {
    const email = `lost-${t.prefix}@example.com`
    const a = await t.signup(email)
    const r = await t.req('POST', '/v1/token/rotate', { body: { email: email.toUpperCase() } })
    expect(r.status).toBe(202)
    expect(r.body.message).toContain('If an account exists')
    await t.s.mailer.idle()
    const mails = readMails(t).filter((m) => m.to === email)
    expect(mails).toHaveLength(1)
    expect(mails[0]!.subject).toContain('owner token')
    const link = linkIn(mails[0]!.text)

    // The old token still works until the link is opened and confirmed.
    expect((await t.req('GET', '/v1/balance', { token: a.token })).status).toBe(200)
    const code = new URL(link).searchParams.get('code')!
    const confirm = await get(t, pathOf(link))
    expect(confirm.status).toBe(200)
    expect(confirm.text).toContain('<form method="post" action="/rotate">')
    expect(confirm.text).toContain(`name="code" value="${code}"`)
    const page = await postForm(t, '/rotate', { code })
    expect(page.status).toBe(200)
    expect(page.headers.get('cache-control')).toBe('no-store')
    expect(page.headers.get('referrer-policy')).toBe('no-referrer')
    const token = /<code class="token" id="token">(sk_[A-Za-z0-9_-]{43})<\/code>/.exec(page.text)?.[1]
    expect(token).toBeDefined()
    expect((await t.req('GET', '/v1/balance', { token: a.token })).status).toBe(401)
    const bal = await t.req('GET', '/v1/balance', { token: token! })
    expect(bal.status).toBe(200)
    expect(bal.body.balance).toBe(500)

    // Single use: the token is never shown twice.
    const again = await get(t, pathOf(link))
    expect(again.status).toBe(409)
    expect(again.text).toContain('LINK_USED')
    expect(again.text).not.toContain(token!)
    const resubmit = await postForm(t, '/rotate', { code })
    expect(resubmit.status).toBe(409)
    expect(resubmit.text).toContain('LINK_USED')
    expect(resubmit.text).not.toContain(token!)
  })

  test('the bearer path still rotates at once (200 {token})', async () => {
    const a = await t.signup()
    const r = await t.req('POST', '/v1/token/rotate', { token: a.token })
    expect(r.status).toBe(200)
    expect(r.body.token).toMatch(/^sk_/)
    expect((await t.req('GET', '/v1/balance', { token: a.token })).status).toBe(401)
    expect((await t.req('GET', '/v1/balance', { token: r.body.token })).status).toBe(200)
  })
})
