/**
 * The owner console as its owner meets it: a real Chromium against a real listening server. Sign
 * in, read the spend chart (one bar per day that had spend, spread by the test clock), kill an agent
 * and see the API refuse it, change a cap and see the API enforce it; a form without its CSRF token,
 * an agent token at sign-in and a rotated owner token are refused. Every page is photographed at
 * 1280 and 360 px wide into test-artifacts/console/ (git-ignored) and checked for horizontal overflow.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'
import { vaultEnv } from '../helpers/vault'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const SHOTS = join(import.meta.dir, '..', '..', 'test-artifacts', 'console')
const DAY = 86_400_000

let t: TestApp
let context: BrowserContext
let base: string
let owner: { token: string; account_id: string }
const problems: string[] = []

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`)
  mkdirSync(SHOTS, { recursive: true })
  t = await startTestApp({ env: vaultEnv() })
  base = await t.listen()
  t.s.cfg.BASE_URL = base
  context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'pab-chromium-')), {
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 900 },
  })
}, 60_000)
afterAll(async () => {
  await context?.close()
  await t?.close()
})

async function openPage(): Promise<Page> {
  const page = await context.newPage()
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(m.text())
  })
  page.on('pageerror', (e) => problems.push(e.message))
  return page
}

async function signIn(page: Page, token: string) {
  await page.goto(`${base}/console/sign-in`)
  await page.getByLabel('token').fill(token)
  await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Sign in' }).click()])
}

const api = (path: string, token: string, body?: unknown) =>
  fetch(`${base}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })

const agentsNamed = async (name: string) =>
  ((await (await api('/v1/agents', owner.token)).json()) as { agents: { name: string }[] }).agents.filter((a) => a.name === name).length

describe('the owner console in a browser', () => {
  test('sign in and read the 30-day chart: one bar per day that had spend', async () => {
    const now = t.clock.now()
    t.clock.set(now - 12 * DAY)
    owner = await t.signup(`console-${t.prefix}@example.com`)
    const agent = (await (await api('/v1/agents', owner.token, { name: 'researcher' })).json()) as { token: string }
    // Spend on five distinct days, different amounts, by the owner and by an agent.
    const spendDays = [12, 9, 5, 2, 0]
    for (const [i, back] of spendDays.entries()) {
      t.clock.set(now - back * DAY)
      for (let k = 0; k <= i; k++) expect((await api('/v1/call/test.echo', k % 2 ? agent.token : owner.token, { q: 'x' })).status).toBe(200)
    }
    t.clock.set(now)
    await flushAll(t)

    const page = await openPage()
    await signIn(page, owner.token)
    expect(new URL(page.url()).pathname).toBe('/console')
    expect(await page.textContent('h1')).toBe('Overview')
    for (const name of ['Overview', 'Agents', 'Policies', 'Activity', 'Money', 'Keys', 'Proposals', 'Webhooks'])
      expect(await page.getByRole('navigation').getByRole('link', { name, exact: true }).count()).toBe(1)
    const bars = page.locator('svg.chart rect.bar')
    expect(await bars.count()).toBe(spendDays.length)
    const titles = await bars.locator('title').allTextContents()
    expect(titles.map((x) => Number(x.split(': ')[1]!.replace(/\D/g, '')))).toEqual([5, 10, 15, 20, 25])
    expect(titles.every((x) => /^\d{4}-\d{2}-\d{2}: \d+ credits$/.test(x))).toBe(true)
    expect(await page.locator('svg.chart text').count()).toBeGreaterThan(6)
    expect(await page.textContent('main')).toContain('researcher')
    expect(await page.getByRole('link', { name: 'Download statement (CSV)' }).count()).toBe(1)
    await page.close()
  }, 60_000)

  test('kill an agent from the agents page: its next API call answers AGENT_KILLED; revive; create one (token shown once; a reload does not create it again)', async () => {
    const created = (await (await api('/v1/agents', owner.token, { name: 'runaway' })).json()) as { id: string; token: string }
    const page = await openPage()
    await page.goto(`${base}/console/agents`)
    const row = page.locator(`li.agent[data-agent="${created.id}"]`)
    await Promise.all([page.waitForNavigation(), row.getByRole('button', { name: 'Kill' }).click()])
    expect(await page.textContent('[role=status]')).toContain('runaway killed')
    const call = await api('/v1/call/test.echo', created.token, { q: 'x' })
    expect(call.status).toBe(403)
    expect(((await call.json()) as { error: string }).error).toBe('AGENT_KILLED')
    await Promise.all([page.waitForNavigation(), page.locator(`li.agent[data-agent="${created.id}"]`).getByRole('button', { name: 'Revive' }).click()])
    expect((await api('/v1/call/test.echo', created.token, { q: 'x' })).status).toBe(200)

    await page.getByLabel('Name').fill('summarizer')
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Create' }).click()])
    const token = (await page.textContent('output.token'))!.trim()
    expect(token).toMatch(/^ak_/)
    expect((await api('/v1/call/test.echo', token, { q: 'x' })).status).toBe(200)
    // A reload resends the form: it is refused as already submitted, with no token and no second agent.
    const resent = await page.reload()
    expect(resent!.status()).toBe(409)
    expect(await page.textContent('[role=alert]')).toContain('Already submitted')
    expect(await page.content()).not.toContain(token)
    expect(await agentsNamed('summarizer')).toBe(1)
    await page.close()
  }, 60_000)

  test("change an agent's daily cap on the policies page: the API enforces it", async () => {
    const created = (await (await api('/v1/agents', owner.token, { name: 'capped' })).json()) as { id: string; token: string }
    const page = await openPage()
    await page.goto(`${base}/console/policies`)
    const form = page.locator('form', { has: page.locator(`input[name="agent"][value="${created.id}"]`) })
    await form.getByLabel('Daily cap').fill('7')
    await Promise.all([page.waitForNavigation(), form.getByRole('button', { name: 'Save agent policy' }).click()])
    expect(await page.textContent('[role=status]')).toContain('Agent policy saved')
    expect((await api('/v1/call/test.echo', created.token, { q: 'x' })).status).toBe(200)
    const denied = await api('/v1/call/test.echo', created.token, { q: 'x' })
    expect(denied.status).toBe(403)
    expect(await denied.json()).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_daily_cap' })
    await page.close()
  }, 60_000)

  test("change the daily cap of an agent that may call nothing: it still may call nothing", async () => {
    const created = (await (await api('/v1/agents', owner.token, { name: 'boxed', allowlist: [] })).json()) as { id: string; token: string }
    const page = await openPage()
    await page.goto(`${base}/console/policies`)
    const form = page.locator('form', { has: page.locator(`input[name="agent"][value="${created.id}"]`) })
    expect(await form.locator('.allow-state').textContent()).toContain('Allows nothing')
    expect(await form.getByLabel('No allowlist (allow everything)').isChecked()).toBe(false)
    await form.getByLabel('Daily cap').fill('9')
    await Promise.all([page.waitForNavigation(), form.getByRole('button', { name: 'Save agent policy' }).click()])
    expect(await page.textContent('[role=status]')).toContain('Agent policy saved')
    const denied = await api('/v1/call/test.echo', created.token, { q: 'x' })
    expect(denied.status).toBe(403)
    expect(await denied.json()).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_allowlist' })
    await page.close()
  }, 60_000)

  test('a form posted without its CSRF token is refused', async () => {
    const created = (await (await api('/v1/agents', owner.token, { name: 'guarded' })).json()) as { id: string; token: string }
    const page = await openPage()
    await page.goto(`${base}/console/agents`)
    const row = page.locator(`li.agent[data-agent="${created.id}"]`)
    await row.locator('input[name="csrf"]').first().evaluate((el) => el.remove())
    const [res] = await Promise.all([page.waitForNavigation(), row.getByRole('button', { name: 'Kill' }).click()])
    expect(res!.status()).toBe(403)
    expect(await page.textContent('h1')).toContain('FORBIDDEN')
    expect((await api('/v1/call/test.echo', created.token, { q: 'x' })).status).toBe(200)
    await page.close()
  }, 60_000)

  test('every page at 1280 and 360 px: photographed, no horizontal overflow', async () => {
    const pages = ['overview:/console', 'agents:/console/agents', 'policies:/console/policies', 'activity:/console/activity', 'money:/console/money', 'keys:/console/keys', 'proposals:/console/proposals', 'webhooks:/console/webhooks']
    const page = await openPage()
    for (const width of [1280, 360]) {
      await page.setViewportSize({ width, height: 900 })
      for (const entry of pages) {
        const [name, path] = entry.split(':') as [string, string]
        const res = await page.goto(`${base}${path}`)
        expect(res!.status()).toBe(200)
        expect(res!.headers()['content-security-policy']).toContain("frame-ancestors 'none'")
        await page.screenshot({ path: join(SHOTS, `${name}-${width}.png`), fullPage: true })
        const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth')
        expect({ page: name, width, overflow }).toEqual({ page: name, width, overflow: 0 })
      }
    }
    await page.close()
  }, 120_000)

  test('an agent token cannot sign in', async () => {
    const created = (await (await api('/v1/agents', owner.token, { name: 'not-an-owner' })).json()) as { token: string }
    const fresh = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'pab-chromium-')), {
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    })
    try {
      const page = await fresh.newPage()
      await page.setViewportSize({ width: 360, height: 700 })
      await page.goto(`${base}/console/sign-in`)
      await page.screenshot({ path: join(SHOTS, 'sign-in-360.png'), fullPage: true })
      await page.getByLabel('token').fill(created.token)
      const [res] = await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Sign in' }).click()])
      expect(res!.status()).toBe(403)
      expect(await page.textContent('[role=alert]')).toContain('agent token')
      expect((await fresh.cookies()).some((c) => c.name === 'pab_console')).toBe(false)
      const back = await page.goto(`${base}/console`)
      expect(new URL(back!.url()).pathname).toBe('/console/sign-in')
    } finally {
      await fresh.close()
    }
  }, 60_000)

  test('the session is gone once the owner token rotates', async () => {
    const page = await openPage()
    expect(new URL((await page.goto(`${base}/console`))!.url()).pathname).toBe('/console')
    const rotated = await api('/v1/token/rotate', owner.token, {})
    expect(rotated.status).toBe(200)
    const after = await page.goto(`${base}/console/agents`)
    expect(new URL(after!.url()).pathname).toBe('/console/sign-in')
    await page.close()
    expect(problems).toEqual([])
  }, 60_000)
})
