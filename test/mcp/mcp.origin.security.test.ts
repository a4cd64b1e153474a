/**
 * The transport's MUST against browser pages and DNS rebinding (docs/api.md §10): a request whose
 * Origin is present and is neither the service's own origin nor listed in MCP_ALLOWED_ORIGINS is
 * refused with HTTP 403 FORBIDDEN before anything runs (no tool, no debit, not even the bearer
 * check); with a loopback BASE_URL, a Host that is not a loopback name is refused the same way
 * (what the official conformance suite's dns-rebinding scenario sends: an initialize, no bearer).
 */
import { describe, expect, test } from 'bun:test'
import { parseConfig } from '../../src/config'
import { redisBalance } from '../helpers/ledger'
import { mcpRig } from '../helpers/mcp'

const ALLOWED = 'https://app.example.com'
const publicRig = mcpRig({ env: { MCP_ALLOWED_ORIGINS: `${ALLOWED}, https://other.example.com:8443` } })
// A local quick start: BASE_URL on loopback, the sandbox without its public opt-in.
const localRig = mcpRig({ env: { BASE_URL: 'http://localhost:8080', PAYMENTS_SANDBOX_PUBLIC: '0' } })

const PAID_CALL = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'test_echo', arguments: { q: 'hi' } } }
const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'origin-test', version: '1.0.0' } },
}

function post(base: string, body: unknown, headers: Record<string, string>, method = 'POST') {
  return fetch(`${base}/mcp`, {
    method,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: method === 'POST' ? JSON.stringify(body) : undefined,
  })
}

async function expectRefused(r: Response) {
  expect(r.status).toBe(403)
  expect(await r.json()).toMatchObject({ error: 'FORBIDDEN' })
}

describe('Origin', () => {
  test('a foreign Origin (a page elsewhere, or a sandboxed one: "null") is refused 403 FORBIDDEN; the paid tool never runs', async () => {
    const a = await publicRig.t.signup()
    for (const origin of ['http://evil.example', 'null', 'https://app.example.com.evil.example', 'http://app.example.com', 'https://app.example.com:444']) {
      await expectRefused(await post(publicRig.base, PAID_CALL, { origin, authorization: `Bearer ${a.token}` }))
    }
    expect(await redisBalance(publicRig.t, a.account_id)).toBe(500)
    const activity = await publicRig.t.req('GET', '/v1/activity', { token: a.token })
    expect(activity.body.calls).toEqual([])
  })

  test('refused before the bearer is looked at, and on every method of the endpoint', async () => {
    await expectRefused(await post(publicRig.base, INITIALIZE, { origin: 'http://evil.example' }))
    const a = await publicRig.t.signup()
    for (const method of ['GET', 'DELETE']) await expectRefused(await post(publicRig.base, null, { origin: 'http://evil.example', authorization: `Bearer ${a.token}` }, method))
  })

  test("the service's own origin and each listed origin (compared as origins: case, default port) are served", async () => {
    const a = await publicRig.t.signup()
    for (const origin of ['http://pab.test', 'http://PAB.test:80', ALLOWED, 'https://other.example.com:8443']) {
      const r = await post(publicRig.base, PAID_CALL, { origin, authorization: `Bearer ${a.token}` })
      expect(r.status, origin).toBe(200)
      expect(((await r.json()) as any).result.isError === true, origin).toBe(false)
    }
    expect(await redisBalance(publicRig.t, a.account_id)).toBeLessThan(500)
  })

  test('no Origin (an MCP client that is not a browser) is served; a non-loopback BASE_URL checks no Host', async () => {
    const a = await publicRig.t.signup()
    const r = await post(publicRig.base, INITIALIZE, { authorization: `Bearer ${a.token}`, host: 'anything.example' })
    expect(r.status).toBe(200)
  })
})

describe('Host, with a loopback BASE_URL', () => {
  test('a Host that is not a loopback name is refused 403 FORBIDDEN, with or without a bearer; nothing is charged', async () => {
    const a = await localRig.t.signup()
    for (const host of ['evil.example.com', 'evil.example.com:8080', 'localhost.evil.example', '127.0.0.1.nip.io', '10.0.0.5:8080']) {
      await expectRefused(await post(localRig.base, INITIALIZE, { host }))
      await expectRefused(await post(localRig.base, PAID_CALL, { host, authorization: `Bearer ${a.token}` }))
    }
    expect(await redisBalance(localRig.t, a.account_id)).toBe(500)
  })

  test('localhost, 127.0.0.1 and [::1], on any port, are served', async () => {
    const a = await localRig.t.signup()
    for (const host of ['localhost', 'localhost:8080', '127.0.0.1', new URL(localRig.base).host, '[::1]', '[::1]:9999', 'LOCALHOST:1']) {
      const r = await post(localRig.base, INITIALIZE, { host, authorization: `Bearer ${a.token}` })
      expect(r.status, host).toBe(200)
    }
  })

  test('the Origin check holds there too: the loopback origin is served, a foreign one refused', async () => {
    const a = await localRig.t.signup()
    expect((await post(localRig.base, INITIALIZE, { origin: 'http://localhost:8080', authorization: `Bearer ${a.token}` })).status).toBe(200)
    // The same page under another loopback spelling of the same port is the service's own.
    expect((await post(localRig.base, INITIALIZE, { origin: 'http://127.0.0.1:8080', authorization: `Bearer ${a.token}` })).status).toBe(200)
    await expectRefused(await post(localRig.base, INITIALIZE, { origin: 'http://localhost:3000', authorization: `Bearer ${a.token}` }))
  })
})

describe('MCP_ALLOWED_ORIGINS', () => {
  test('an entry that is not scheme://host[:port] stops the start, naming the setting', () => {
    const env = { BASE_URL: 'http://localhost:8080' }
    for (const bad of ['app.example.com', 'https://app.example.com/path', 'ftp://app.example.com', 'null', 'https://user@app.example.com'])
      expect(() => parseConfig({ ...env, MCP_ALLOWED_ORIGINS: bad }), bad).toThrow('MCP_ALLOWED_ORIGINS')
    expect(parseConfig({ ...env, MCP_ALLOWED_ORIGINS: ' https://App.example.com/ ,http://localhost:3000' }).MCP_ALLOWED_ORIGINS).toContain('App.example.com')
  })
})
