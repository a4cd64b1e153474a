/**
 * An MCP client that connects by URL alone (docs/mcp-oauth.md), end to end: the official SDK's OAuth
 * client (`auth()` behind a StreamableHTTPClientTransport with an authProvider) registers itself,
 * sends the owner to the consent page, which a real Chromium with JavaScript off signs in to and
 * answers; the client then calls a paid tool (price 5, on the fake upstream) within the budget of 12
 * the owner allowed, and is refused `agent_budget` past it. The agent is listed with its
 * `oauth_client`; the access token is refused on the REST API; killing the agent ends the client.
 * Deny sends `access_denied` back and creates no agent.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext } from 'playwright-core'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js'
import { startTestApp, type TestApp } from '../helpers/harness'
import { callTool } from '../helpers/mcp'

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

let t: TestApp
let context: BrowserContext
let base: string
let owner: { token: string; account_id: string }
let callback: ReturnType<typeof Bun.serve>
/** What the client's redirect URI received, in order. */
const received: URLSearchParams[] = []

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`)
  t = await startTestApp()
  base = await t.listen()
  t.s.cfg.BASE_URL = base
  owner = await t.signup(`mcp-oauth-${t.prefix}@example.com`)
  callback = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(req) {
      const url = new URL(req.url)
      // Only the redirect itself (the browser also asks for /favicon.ico).
      if (url.pathname === '/callback') received.push(url.searchParams)
      return new Response('<p>You can close this window.</p>', { headers: { 'content-type': 'text/html' } })
    },
  })
  context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'pab-chromium-')), {
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    javaScriptEnabled: false,
  })
}, 60_000)
afterAll(async () => {
  await context?.close()
  callback?.stop(true)
  await t?.close()
})

/** The SDK's OAuth client state, kept in memory as a hosted client would keep it in its store. */
class MemoryProvider implements OAuthClientProvider {
  info?: OAuthClientInformationMixed
  saved?: OAuthTokens
  verifier = ''
  authorizationUrl?: URL
  constructor(private name: string) {}
  get redirectUrl() {
    return `http://127.0.0.1:${callback.port}/callback`
  }
  get clientMetadata() {
    return { client_name: this.name, redirect_uris: [this.redirectUrl], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' }
  }
  clientInformation() {
    return this.info
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info
  }
  tokens() {
    return this.saved
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url
  }
  saveCodeVerifier(v: string) {
    this.verifier = v
  }
  codeVerifier() {
    return this.verifier
  }
}

const transportFor = (provider: MemoryProvider) => new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider })

/** Connecting without a token: the SDK discovers, registers and asks for the owner's consent. */
async function startAuthorization(provider: MemoryProvider): Promise<URL> {
  const client = new Client({ name: 'oauth-test', version: '1.0.0' })
  const error = await client.connect(transportFor(provider)).catch((e: unknown) => e)
  expect(error).toBeInstanceOf(UnauthorizedError)
  expect(provider.info?.client_id).toMatch(/^mcpc_/)
  return provider.authorizationUrl!
}

const agentList = async () =>
  ((await (await fetch(`${base}/v1/agents`, { headers: { authorization: `Bearer ${owner.token}` } })).json()) as { agents: { id: string; name: string; budget: number | null; oauth_client: string | null; state: string }[] }).agents

describe('an MCP client connected by URL alone', () => {
  test('register, sign in, Allow with a budget of 12: two paid calls, the third refused agent_budget; killed → refused', async () => {
    const provider = new MemoryProvider('Browser Chat')
    const authorizationUrl = await startAuthorization(provider)
    const page = await context.newPage()
    await page.goto(authorizationUrl.toString())
    // No console session yet: the console's sign-in, then back to the consent page.
    await page.getByLabel('token').fill(owner.token)
    await Promise.all([page.waitForNavigation(), page.getByRole('button', { name: 'Sign in' }).click()])
    expect(await page.getByRole('heading', { name: 'Connect Browser Chat' }).count()).toBe(1)
    expect(await page.getByText(`127.0.0.1:${callback.port}`).count()).toBeGreaterThan(0)
    expect(await page.getByLabel('Agent name').inputValue()).toBe('Browser Chat')
    expect(await page.getByLabel('Expires in').inputValue()).toBe('30')
    await page.getByLabel('Budget').fill('12')
    await Promise.all([page.waitForURL(/\/callback\?/), page.getByRole('button', { name: 'Allow' }).click()])
    await page.close()
    const back = received.at(-1)!
    expect(back.get('iss')).toBe(base)
    const code = back.get('code')!
    expect(code).toBeTruthy()

    const transport = transportFor(provider)
    await transport.finishAuth(code)
    expect(provider.saved).toMatchObject({ token_type: expect.stringMatching(/^bearer$/i), expires_in: 3600, scope: 'mcp' })
    const client = new Client({ name: 'oauth-test', version: '1.0.0' })
    await client.connect(transportFor(provider))
    try {
      for (let i = 0; i < 2; i++) {
        const ok = await callTool(client, 'call_capability', { slug: 'test.echo', params: { q: 'x' } })
        expect(ok.isError).toBe(false)
        expect(ok.json.charged).toBe(5)
      }
      const third = await callTool(client, 'call_capability', { slug: 'test.echo', params: { q: 'x' } })
      expect(third.isError).toBe(true)
      expect(third.json).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_budget' })

      const agent = (await agentList()).find((a) => a.oauth_client === 'Browser Chat')!
      expect(agent).toMatchObject({ name: 'Browser Chat', budget: 12, state: 'active' })

      // The access token is for /mcp only.
      const rest = await fetch(`${base}/v1/balance`, { headers: { authorization: `Bearer ${provider.saved!.access_token}` } })
      expect(rest.status).toBe(401)

      // The console names the client on the agent's row, beside its Kill and Revoke buttons.
      const consolePage = await context.newPage()
      await consolePage.goto(`${base}/console/agents`)
      const row = consolePage.locator(`li[data-agent="${agent.id}"]`)
      expect(await row.getByText('OAuth client: Browser Chat').count()).toBe(1)
      expect(await row.getByRole('button', { name: 'Revoke' }).count()).toBe(1)
      await consolePage.close()

      const kill = await fetch(`${base}/v1/agents/${agent.id}/kill`, { method: 'POST', headers: { authorization: `Bearer ${owner.token}` } })
      expect(kill.status).toBe(200)
      const killed = await callTool(client, 'get_balance')
      expect(killed.isError).toBe(true)
      expect(killed.json.error).toBe('AGENT_KILLED')
    } finally {
      await client.close()
    }
  }, 60_000)

  test('Deny → access_denied, no agent', async () => {
    const before = (await agentList()).length
    const provider = new MemoryProvider('Denied Chat')
    const authorizationUrl = await startAuthorization(provider)
    const page = await context.newPage()
    // Signed in by the test before: straight to the consent page.
    await page.goto(authorizationUrl.toString())
    await Promise.all([page.waitForURL(/\/callback\?/), page.getByRole('button', { name: 'Deny' }).click()])
    await page.close()
    const back = received.at(-1)!
    expect(back.get('error')).toBe('access_denied')
    expect(back.get('code')).toBeNull()
    expect((await agentList()).length).toBe(before)
  }, 60_000)
})
