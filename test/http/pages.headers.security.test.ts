/**
 * What every browser page sends, success or refusal, on every surface (the console, the vault link,
 * consent, credit packs, token recovery): a CSP with no script and `frame-ancestors 'none'`,
 * X-Frame-Options DENY, no Referer (the URLs carry one-time codes and refs), nosniff, no-store and
 * noindex; and values an agent sets (its name, a proposal's reason, a webhook URL, activity filters)
 * come back escaped wherever they are shown.
 * Before: the vault link's pages kept a copy of the page headers without `x-robots-tag: noindex`
 * (the page shows the account's e-mail to whoever holds the URL, and opening it uses nothing up), and
 * the console's statement download carried the CSP only (no nosniff, no framing or Referer rule).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp, type TestResponse } from '../helpers/harness'
import { ConsoleClient } from '../helpers/console'
import { newLink, vaultEnv } from '../helpers/vault'
import { consentPath, get, GOOD_CARD, pathOf, postForm, readMails } from '../helpers/money'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: vaultEnv() })
})
afterAll(async () => {
  await t?.close()
})

/** The headers of a page, by name: what each must hold. */
function pageHeaders(r: TestResponse) {
  const csp = r.headers.get('content-security-policy') ?? ''
  return {
    noScript: csp.includes("default-src 'none'") && !csp.includes('script-src'),
    frameAncestors: csp.includes("frame-ancestors 'none'"),
    frameOptions: r.headers.get('x-frame-options'),
    referrer: r.headers.get('referrer-policy'),
    nosniff: r.headers.get('x-content-type-options'),
    cache: r.headers.get('cache-control'),
    robots: r.headers.get('x-robots-tag'),
  }
}
const PAGE = { noScript: true, frameAncestors: true, frameOptions: 'DENY', referrer: 'no-referrer', nosniff: 'nosniff', cache: 'no-store', robots: 'noindex' }

describe('page headers', () => {
  test('every browser page, shown or refused, sends the full page header set (CSP, framing, Referer, nosniff, no-store, noindex)', async () => {
    const email = `hdr-${t.prefix}@example.com`
    const a = await t.signup(email)
    const answers: [string, TestResponse][] = []
    const code = await newLink(t, a.token)
    answers.push(['GET /vault/:code', await get(t, `/vault/${code}`)])
    answers.push(['POST /vault/:code', await postForm(t, `/vault/${code}`, { key: 'sk-test-abcdefgh' })])
    answers.push(['POST /vault/:code (used)', await postForm(t, `/vault/${code}`, { key: 'sk-test-abcdefgh' })])
    answers.push(['GET /vault/:code (unknown)', await get(t, '/vault/xxxxxxxxxxxx')])
    const consent = await consentPath(t, a.token)
    answers.push(['GET /mandate', await get(t, consent)])
    answers.push(['POST /mandate', await postForm(t, consent, { card: GOOD_CARD })])
    answers.push(['GET /mandate (unknown ref)', await get(t, '/mandate?ref=nope')])
    const packs = pathOf((await t.req('GET', '/v1/balance', { token: a.token })).body.links.buy_credits)
    answers.push(['GET /topup', await get(t, packs)])
    answers.push(['POST /topup', await postForm(t, `${packs}&pack=usd5`, { card: GOOD_CARD })])
    answers.push(['GET /topup/done', await get(t, '/topup/done')])
    await t.req('POST', '/v1/token/rotate', { body: { email } })
    await t.s.mailer.idle()
    const link = /http:\/\/pab\.test(\/rotate\?code=[A-Za-z0-9_-]{43})/.exec(readMails(t).find((m) => m.to === email)!.text)![1]!
    answers.push(['GET /rotate', await get(t, link)])
    const rotated = await postForm(t, '/rotate', { code: new URL(`http://x${link}`).searchParams.get('code')! })
    answers.push(['POST /rotate', rotated])
    answers.push(['GET /rotate (bad code)', await get(t, '/rotate?code=abc')])
    const c = new ConsoleClient(t)
    answers.push(['GET /console/sign-in', await c.get('/console/sign-in')])
    expect((await c.signIn(/id="token">([^<]+)</.exec(rotated.text)![1]!)).status).toBe(303)
    answers.push(['GET /console/agents', await c.get('/console/agents')])
    answers.push(['POST /console/agents', await c.submit('/console/agents', '/console/agents', { name: 'hdr' })])
    answers.push(['GET /console/nowhere', await c.get('/console/nowhere')])
    for (const [name, r] of answers) expect({ name, ...pageHeaders(r) }).toEqual({ name, ...PAGE })
  })

  test("the console's statement download is not sniffed, framed or sent with a Referer, and is not cached", async () => {
    const a = await t.signup()
    const c = new ConsoleClient(t)
    await c.signIn(a.token)
    const r = await c.get('/console/ledger?format=csv')
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toStartWith('text/csv')
    expect(r.headers.get('content-disposition')).toStartWith('attachment;')
    const { robots: _, ...rest } = pageHeaders(r)
    const { robots: __, ...want } = PAGE
    expect(rest).toEqual(want)
  })
})

describe('values an agent sets, on the pages', () => {
  test('an agent name, a proposal reason, a webhook URL and the activity filters come back escaped on every console page', async () => {
    const X = '<img src=x onerror=alert(1)>"\'`'
    const a = await t.signup()
    const named = await t.req('POST', '/v1/agents', { token: a.token, body: { name: X } })
    expect(named.status).toBe(201)
    const other = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'other' } })
    const proposal = await t.req('POST', '/v1/proposals', { token: other.body.token, body: { kind: 'raise_daily_cap', value: 5, agent_id: other.body.id, reason: X } })
    expect(proposal.status).toBe(201)
    // Not an https URL of a public host: the API refuses it, so it never reaches an href or a page.
    expect((await t.req('PUT', '/v1/webhooks', { token: a.token, body: { url: 'javascript:alert(1)//https://example.com' } })).status).toBe(400)
    const c = new ConsoleClient(t)
    await c.signIn(a.token)
    const q = encodeURIComponent(X)
    for (const path of ['/console', '/console/agents', '/console/policies', `/console/activity?agent=${q}&route=${q}&outcome=${q}`, '/console/proposals', '/console/webhooks']) {
      const r = await c.get(path)
      expect({ path, status: r.status }).toEqual({ path, status: 200 })
      expect(r.text).not.toContain('<img')
      expect(r.text).not.toMatch(/href="\s*javascript:/i)
    }
    expect((await c.get('/console/agents')).text).toContain('&#60;img src=x onerror=alert(1)&#62;&#34;&#39;`')
    expect((await c.get('/console/proposals')).text).toContain('<p>&#60;img src=x onerror=alert(1)&#62;&#34;&#39;`</p>')
  })
})
