/**
 * The money-in pages as a human meets them: a real headless Chromium (Debian's, driven by
 * playwright-core) against a real listening server, with JavaScript turned off to prove the pages
 * need none. The sandbox consent page (a declined card, then the test card), a credit pack, and
 * the e-mailed /rotate link whose confirm button shows a new owner token once.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core'
import { startTestApp, type TestApp } from '../helpers/harness'
import { readMails } from '../helpers/money'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

let t: TestApp
let browser: Browser
let context: BrowserContext
let base: string
beforeAll(async () => {
  // A missing browser is a broken environment, not a reason to skip.
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`)
  t = await startTestApp()
  t.app.listen({ port: 0, hostname: '127.0.0.1' })
  base = `http://127.0.0.1:${t.app.server!.port}`
  t.s.cfg.BASE_URL = base // links must point at this server; the port is known only now
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
  context = await browser.newContext({ javaScriptEnabled: false })
})
afterAll(async () => {
  await context?.close()
  await browser?.close()
  await t?.app.stop()
  await t?.close()
})

/** A page that records what the browser complained about (CSP violations show up here). */
async function openPage(): Promise<{ page: Page; problems: string[] }> {
  const page = await context.newPage()
  const problems: string[] = []
  page.on('console', (m) => {
    // Non-2xx pages log "Failed to load resource" by design; anything else (a CSP violation) counts.
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(m.text())
  })
  page.on('pageerror', (e) => problems.push(e.message))
  return { page, problems }
}

async function api(method: string, path: string, token?: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  })
  return { status: res.status, body: (await res.json()) as any }
}

async function submit(page: Page, selector = 'button[type="submit"]') {
  const [res] = await Promise.all([page.waitForNavigation(), page.click(selector)])
  return res!
}

describe('money-in pages in a browser (no JavaScript)', () => {
  test('the sandbox consent page: a declined card, then the test card turns auto-refill on', async () => {
    const email = `consent-browser-${t.prefix}@example.com`
    const a = await t.signup(email)
    // The operator sets the limits; the page shows them and asks only for the card.
    await api('PUT', '/v1/mandate', a.token, { threshold: 300, refill: 2000, ceiling: 10000 })
    const { body: m } = await api('GET', '/v1/mandate', a.token)
    expect(m.enable_url.startsWith(`${base}/mandate?ref=`)).toBe(true)

    const { page, problems } = await openPage()
    const opened = await page.goto(m.enable_url)
    expect(opened!.status()).toBe(200)
    expect(await page.textContent('h1')).toBe(`Auto-refill for ${email}`)
    expect(await page.textContent('.limits')).toContain('10000 credits')
    await page.fill('input[name="card"]', '4000 0000 0000 0002')
    const declined = await submit(page)
    expect(declined.status()).toBe(402)
    expect(await page.textContent('[role="alert"]')).toContain('Card declined')
    // The limits are still shown after the decline; only the card is asked again.
    expect(await page.textContent('.limits')).toContain('2000 credits')

    await page.fill('input[name="card"]', '4242 4242 4242 4242')
    const saved = await submit(page)
    expect(saved.status()).toBe(200)
    expect(await page.textContent('h1')).toBe('Auto-refill is on')
    expect(await page.textContent('.last4')).toBe('4242')
    expect(await page.content()).not.toContain('4242 4242 4242 4242')
    expect(problems).toEqual([])

    const after = await api('GET', '/v1/mandate', a.token)
    expect(after.body).toMatchObject({ enabled: true, threshold: 300, refill: 2000, ceiling: 10000, card: { brand: 'visa', last4: '4242' } })
    await page.close()
  })

  test('a credit pack bought on the sandbox payment page', async () => {
    const a = await t.signup()
    const { body: bal } = await api('GET', '/v1/balance', a.token)
    const { page, problems } = await openPage()
    expect((await page.goto(bal.links.buy_credits))!.status()).toBe(200)
    const form = page.locator('form.pack').first()
    await form.locator('input[name="card"]').fill('4242424242424242')
    const [res] = await Promise.all([page.waitForNavigation(), form.locator('button').click()])
    expect(res!.status()).toBe(200)
    expect(await page.textContent('h1')).toBe('5000 credits added')
    expect(await page.textContent('.balance')).toBe('5500')
    expect(problems).toEqual([])
    await page.close()
  })

  test('the /rotate page shows the new owner token once; the old token is dead', async () => {
    const email = `rotate-browser-${t.prefix}@example.com`
    const a = await t.signup(email)
    expect((await api('POST', '/v1/token/rotate', undefined, { email })).status).toBe(202)
    await t.s.mailer.idle()
    const mail = readMails(t).find((x) => x.to === email)!
    const link = /(http:\/\/127\.0\.0\.1:\d+\/rotate\?code=[A-Za-z0-9_-]{43})/.exec(mail.text)![1]!

    const { page, problems } = await openPage()
    const opened = await page.goto(link)
    expect(opened!.status()).toBe(200)
    // Opening the link changes nothing; the confirm button (a plain form post) rotates.
    expect(await page.textContent('h1')).toBe('Replace your owner token')
    expect((await api('GET', '/v1/balance', a.token)).status).toBe(200)
    expect((await submit(page))!.status()).toBe(200)
    expect(await page.textContent('h1')).toBe('Your new owner token')
    const token = (await page.textContent('#token'))!.trim()
    expect(token).toMatch(/^sk_[A-Za-z0-9_-]{43}$/)
    expect(problems).toEqual([])

    expect((await api('GET', '/v1/balance', a.token)).status).toBe(401)
    expect((await api('GET', '/v1/balance', token)).status).toBe(200)

    const reloaded = await page.goto(link)
    expect(reloaded!.status()).toBe(409)
    expect(await page.textContent('h1')).toBe('LINK_USED')
    expect(await page.content()).not.toContain(token)
    await page.close()
  })
})
