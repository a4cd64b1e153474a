/**
 * The vault link as a human meets it: a real Chromium against a real listening server. Chromium
 * comes from Debian (`chromium`, installed by npm test's set-up, scripts/test-setup.sh); playwright-core only drives it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { chromium, type Browser, type Page } from 'playwright-core'
import { startTestApp, type TestApp } from '../helpers/harness'
import { vaultEnv } from '../helpers/vault'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

let t: TestApp
let browser: Browser
let base: string
beforeAll(async () => {
  // A missing browser is a broken environment, not a reason to skip: CI installs it.
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`)
  t = await startTestApp({ env: vaultEnv() })
  t.app.listen({ port: 0, hostname: '127.0.0.1' })
  base = `http://127.0.0.1:${t.app.server!.port}`
  // The port is known only after listening; links must point at this server.
  t.s.cfg.BASE_URL = base
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
})
afterAll(async () => {
  await browser?.close()
  await t?.app.stop()
  await t?.close()
})

/** A page that records what the browser complained about (CSP violations show up here). */
async function openPage(): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage()
  const problems: string[] = []
  page.on('console', (m) => {
    // The 409 pages log "Failed to load resource" by design; anything else (a CSP violation) counts.
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(m.text())
  })
  page.on('pageerror', (e) => problems.push(e.message))
  return { page, problems }
}

describe('a vault link in a browser', () => {
  test('open, paste, submit, see last4; then LINK_USED on reload and on resubmit', async () => {
    const email = `browser-${t.prefix}@example.com`
    const a = await t.signup(email)
    const linkRes = await fetch(`${base}/v1/keys/link`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'fakebyok' }),
    })
    expect(linkRes.status).toBe(201)
    const { url } = (await linkRes.json()) as { url: string }
    expect(url.startsWith(`${base}/vault/`)).toBe(true)

    const first = await openPage()
    const opened = await first.page.goto(url)
    expect(opened!.status()).toBe(200)
    expect(await first.page.textContent('h1')).toContain('fakebyok')
    expect(await first.page.textContent('main')).toContain(email)

    // A second tab holds the same form, to resubmit after the first tab used the link.
    const second = await openPage()
    await second.page.goto(url)

    const key = 'sk-typed-in-a-browser-BRWS'
    await first.page.fill('input[name="key"]', key)
    const [stored] = await Promise.all([first.page.waitForNavigation(), first.page.click('button[type="submit"]')])
    expect(stored!.status()).toBe(200)
    expect(await first.page.textContent('h1')).toBe('Key stored')
    expect(await first.page.textContent('.last4')).toBe('BRWS')
    expect(await first.page.content()).not.toContain(key)

    const reloaded = await first.page.reload()
    expect(reloaded!.status()).toBe(409)
    expect(await first.page.textContent('h1')).toBe('LINK_USED')

    const revisited = await first.page.goto(url)
    expect(revisited!.status()).toBe(409)
    expect(await first.page.textContent('h1')).toBe('LINK_USED')

    await second.page.fill('input[name="key"]', 'sk-second-tab-attempt-TAB2')
    const [resubmitted] = await Promise.all([second.page.waitForNavigation(), second.page.click('button[type="submit"]')])
    expect(resubmitted!.status()).toBe(409)
    expect(await second.page.textContent('h1')).toBe('LINK_USED')

    expect(first.problems).toEqual([])
    expect(second.problems).toEqual([])

    const keys = await fetch(`${base}/v1/keys`, { headers: { authorization: `Bearer ${a.token}` } })
    expect(((await keys.json()) as { keys: { last4: string }[] }).keys.map((k) => k.last4)).toEqual(['BRWS'])
  })
})
