/**
 * OAuth 2.1 for MCP clients over HTTP (docs/mcp-oauth.md): the metadata, the 401 challenge, the
 * token endpoint's refusals (a wrong PKCE verifier, a code used twice, an expired code, a resource
 * mismatch), refresh rotation and reuse (the grant revoked), an unregistered redirect_uri (a page,
 * never a redirect), Deny (access_denied, no agent), registration's bounds.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { ConsoleClient } from '../helpers/console'
import { authorizeQuery, connectClient, consent, exchange, mcpList, pkce, raw, REDIRECT, refresh, registerClient } from '../helpers/oauth'

let t: TestApp
let owner: { token: string; account_id: string }

beforeAll(async () => {
  t = await startTestApp()
  owner = await t.signup(`oauth-${t.prefix}@example.com`)
}, 30_000)
afterAll(async () => {
  await t?.close()
})

const agents = async () => (await t.req('GET', '/v1/agents', { token: owner.token })).body.agents as { id: string; name: string; oauth_client: string | null; budget: number | null; expires_at: string | null }[]

describe('discovery', () => {
  test('/mcp without a token: 401 UNAUTHORIZED with the RFC 9728 challenge', async () => {
    const res = await raw(t, 'POST', '/mcp', { json: { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers: { accept: 'application/json, text/event-stream' } })
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${t.s.cfg.BASE_URL}/.well-known/oauth-protected-resource/mcp", scope="mcp"`)
    expect(((await res.json()) as { error: string }).error).toBe('UNAUTHORIZED')
  })

  test('protected resource and authorization server metadata', async () => {
    const base = t.s.cfg.BASE_URL
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const prm = (await (await raw(t, 'GET', path)).json()) as Record<string, unknown>
      expect(prm).toMatchObject({ resource: `${base}/mcp`, authorization_servers: [base], scopes_supported: ['mcp'], bearer_methods_supported: ['header'] })
    }
    const as = (await (await raw(t, 'GET', '/.well-known/oauth-authorization-server')).json()) as Record<string, unknown>
    expect(as).toMatchObject({
      issuer: base,
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      registration_endpoint: `${base}/oauth/register`,
      revocation_endpoint: `${base}/oauth/revoke`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      scopes_supported: ['mcp'],
      client_id_metadata_document_supported: true,
    })
  })
})

describe('registration', () => {
  test('public clients only, https or loopback redirects, no control characters', async () => {
    const bad = async (meta: Record<string, unknown>) => {
      const res = await raw(t, 'POST', '/oauth/register', { json: { client_name: 'x', redirect_uris: [REDIRECT], ...meta } })
      return { status: res.status, body: (await res.json()) as { error: string } }
    }
    expect((await bad({ redirect_uris: ['http://evil.example/cb'] })).body.error).toBe('invalid_redirect_uri')
    expect((await bad({ redirect_uris: ['https://ok.example/cb#frag'] })).body.error).toBe('invalid_redirect_uri')
    expect((await bad({ token_endpoint_auth_method: 'client_secret_basic' })).body.error).toBe('invalid_client_metadata')
    expect((await bad({ client_name: 'bad\u0007name' })).body.error).toBe('invalid_client_metadata')
    expect((await bad({ client_name: 'y'.repeat(101) })).status).toBe(400)
    const big = await raw(t, 'POST', '/oauth/register', { json: { client_name: 'x', redirect_uris: [REDIRECT], pad: 'x'.repeat(9000) } })
    expect(big.status).toBe(400)
    const ok = await registerClient(t, { redirect_uris: ['https://chat.example/cb', REDIRECT] })
    expect(ok.client_id).toMatch(/^mcpc_/)
  })
})

describe('authorization', () => {
  test('an unregistered redirect_uri or an unknown client: an HTML page, never a redirect', async () => {
    const client = await registerClient(t)
    const { challenge } = pkce()
    for (const q of [authorizeQuery(t, client.client_id, challenge, { redirect_uri: 'https://attacker.example/cb' }), authorizeQuery(t, 'mcpc_AAAAAAAAAAAAAAAAAAAAAA', challenge)]) {
      for (const path of ['/oauth/authorize', '/console/authorize']) {
        const res = await raw(t, 'GET', `${path}?${q}`)
        expect(res.status).toBe(400)
        expect(res.headers.get('location')).toBeNull()
        expect(res.headers.get('content-type')).toContain('text/html')
      }
    }
  })

  test('PKCE required and the resource checked: errors go back on the redirect with state', async () => {
    const client = await registerClient(t)
    const { challenge } = pkce()
    const noPkce = await raw(t, 'GET', `/oauth/authorize?${authorizeQuery(t, client.client_id, challenge, { code_challenge_method: 'plain' })}`)
    expect(noPkce.status).toBe(302)
    const a = new URL(noPkce.headers.get('location')!)
    expect(a.origin + a.pathname).toBe(REDIRECT)
    expect(a.searchParams.get('error')).toBe('invalid_request')
    expect(a.searchParams.get('state')).toBe('st-123')
    const wrongResource = await raw(t, 'GET', `/oauth/authorize?${authorizeQuery(t, client.client_id, challenge, { resource: 'https://other.example/mcp' })}`)
    expect(new URL(wrongResource.headers.get('location')!).searchParams.get('error')).toBe('invalid_target')
    const good = await raw(t, 'GET', `/oauth/authorize?${authorizeQuery(t, client.client_id, challenge)}`)
    expect(good.status).toBe(302)
    expect(good.headers.get('location')).toStartWith('/console/authorize?')
  })

  test('without a session the consent page is the console sign-in, which comes back to it', async () => {
    const client = await registerClient(t)
    const { challenge } = pkce()
    const c = new ConsoleClient(t)
    const q = authorizeQuery(t, client.client_id, challenge)
    const page = await c.get(`/console/authorize?${q}`)
    expect(page.text).toContain('Sign in')
    expect(page.text).toContain('name="next"')
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)![1]!
    const signed = await c.post('/console/sign-in', { csrf, token: owner.token, next: `/console/authorize?${q}` })
    expect(signed.status).toBe(303)
    expect(signed.headers.get('location')).toBe(`/console/authorize?${q}`)
    const consentPage = await c.get(signed.headers.get('location')!)
    for (const word of ['Test Chat', '127.0.0.1:9', 'Agent name', 'Budget', 'Daily cap', 'Allowlist', 'Expires in', 'Allow', 'Deny']) expect(consentPage.text).toContain(word)
    // A signed-in owner is never sent elsewhere by `next`.
    const elsewhere = await new ConsoleClient(t).get('/console/sign-in')
    expect(elsewhere.text).not.toContain('name="next"')
  })

  test('a client name is shown escaped', async () => {
    const client = await registerClient(t, { client_name: '<script>alert(1)</script>' })
    const c = new ConsoleClient(t)
    await c.signIn(owner.token)
    const page = await c.get(`/console/authorize?${authorizeQuery(t, client.client_id, pkce().challenge)}`)
    expect(page.text).not.toContain('<script>')
    expect(page.text).toContain('&#60;script&#62;')
  })

  test('Deny → access_denied with state, and no agent', async () => {
    const before = (await agents()).length
    const client = await registerClient(t)
    const back = await consent(t, owner.token, authorizeQuery(t, client.client_id, pkce().challenge), 'deny', {})
    expect(back.searchParams.get('error')).toBe('access_denied')
    expect(back.searchParams.get('state')).toBe('st-123')
    expect(back.searchParams.get('code')).toBeNull()
    expect((await agents()).length).toBe(before)
  })
})

describe('the consent form', () => {
  test('Allow without a budget, or with a control character in the name: refused (BAD_REQUEST naming the field), no agent, no redirect', async () => {
    const before = (await agents()).length
    const client = await registerClient(t)
    const c = new ConsoleClient(t)
    await c.signIn(owner.token)
    const q = authorizeQuery(t, client.client_id, pkce().challenge)
    const { formOf } = await import('../helpers/console')
    for (const [fields, field] of [
      [{ budget: '' }, 'budget'],
      [{ budget: '5', agent_name: 'bad\u0007name' }, 'agent_name'],
    ] as const) {
      const page = await c.get(`/console/authorize?${q}`)
      const res = await c.post('/console/authorize', { ...formOf(page.text, 'value="allow"'), ...fields, decision: 'allow' })
      expect(res.status).toBe(400)
      expect(res.headers.get('location')).toBeNull()
      expect(res.text).toContain('BAD_REQUEST')
      expect(res.text).toContain(field)
    }
    expect((await agents()).length).toBe(before)
  })

  test('a consent form posted twice acts once', async () => {
    const client = await registerClient(t)
    const c = new ConsoleClient(t)
    await c.signIn(owner.token)
    const { formOf } = await import('../helpers/console')
    const page = await c.get(`/console/authorize?${authorizeQuery(t, client.client_id, pkce().challenge)}`)
    const fields = { ...formOf(page.text, 'value="allow"'), budget: '3', decision: 'allow' }
    expect((await c.post('/console/authorize', fields)).status).toBe(303)
    expect((await c.post('/console/authorize', fields)).status).toBe(409)
    expect((await agents()).filter((a) => a.oauth_client === 'Test Chat' && a.budget === 3).length).toBe(1)
  })
})

describe('tokens', () => {
  test('Allow creates the capped agent; the code buys tokens that act as it at /mcp only', async () => {
    const { client, verifier, code, back } = await connectClient(t, owner.token, { budget: '12', daily_cap: '10', allowlist: 'test.*', expires_days: '7' })
    expect(back.searchParams.get('state')).toBe('st-123')
    expect(back.searchParams.get('iss')).toBe(t.s.cfg.BASE_URL)
    const agent = (await agents()).find((a) => a.oauth_client === 'Test Chat' && a.budget === 12)!
    expect(agent).toBeDefined()
    expect(Date.parse(agent.expires_at!) - t.clock.now()).toBe(7 * 86_400_000)
    const res = await exchange(t, { code, clientId: client.client_id, verifier })
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const tokens = (await res.json()) as Record<string, unknown>
    expect(tokens).toMatchObject({ token_type: 'Bearer', expires_in: 3600, scope: 'mcp' })
    expect((await mcpList(t, tokens.access_token as string)).status).toBe(200)
    expect((await t.req('GET', '/v1/balance', { token: tokens.access_token as string })).status).toBe(401)
    // Expired after an hour.
    t.clock.advance(3600_000)
    expect((await mcpList(t, tokens.access_token as string)).status).toBe(401)
    t.clock.advance(-3600_000)
  })

  test('a wrong PKCE verifier → invalid_grant (and the code is spent)', async () => {
    const { client, code, verifier } = await connectClient(t, owner.token)
    const wrong = await exchange(t, { code, clientId: client.client_id, verifier: pkce().verifier })
    expect(wrong.status).toBe(400)
    expect(await wrong.json()).toMatchObject({ error: 'invalid_grant' })
    expect((await exchange(t, { code, clientId: client.client_id, verifier })).status).toBe(400)
  })

  test('a code used twice: the second is invalid_grant and the tokens of the first are revoked', async () => {
    const { client, code, verifier } = await connectClient(t, owner.token)
    const first = (await (await exchange(t, { code, clientId: client.client_id, verifier })).json()) as { access_token: string; refresh_token: string }
    expect((await mcpList(t, first.access_token)).status).toBe(200)
    const second = await exchange(t, { code, clientId: client.client_id, verifier })
    expect(second.status).toBe(400)
    expect(await second.json()).toMatchObject({ error: 'invalid_grant' })
    expect((await mcpList(t, first.access_token)).status).toBe(401)
    expect((await refresh(t, client.client_id, first.refresh_token)).status).toBe(400)
  })

  test('an expired code (past 60 s) → invalid_grant', async () => {
    const { client, code, verifier } = await connectClient(t, owner.token)
    t.clock.advance(61_000)
    const res = await exchange(t, { code, clientId: client.client_id, verifier })
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('expired') })
  })

  test('a resource or redirect_uri other than authorized → refused', async () => {
    const { client, code, verifier } = await connectClient(t, owner.token)
    const other = await exchange(t, { code, clientId: client.client_id, verifier, resource: 'https://other.example/mcp' })
    expect(other.status).toBe(400)
    expect(await other.json()).toMatchObject({ error: 'invalid_target' })
    const redirect = await exchange(t, { code, clientId: client.client_id, verifier, redirectUri: 'http://127.0.0.1:9/other' })
    expect(await redirect.json()).toMatchObject({ error: 'invalid_grant' })
  })

  test('refresh rotates; an old refresh token presented again revokes the whole grant', async () => {
    const { client, code, verifier } = await connectClient(t, owner.token)
    const first = (await (await exchange(t, { code, clientId: client.client_id, verifier })).json()) as { access_token: string; refresh_token: string }
    const r2 = await refresh(t, client.client_id, first.refresh_token)
    expect(r2.status).toBe(200)
    const second = (await r2.json()) as { access_token: string; refresh_token: string }
    expect(second.refresh_token).not.toBe(first.refresh_token)
    expect((await mcpList(t, second.access_token)).status).toBe(200)
    expect((await mcpList(t, first.access_token)).status).toBe(401)
    // Another client cannot use it.
    expect(await (await refresh(t, 'mcpc_AAAAAAAAAAAAAAAAAAAAAA', second.refresh_token)).json()).toMatchObject({ error: 'invalid_grant' })
    const reuse = await refresh(t, client.client_id, first.refresh_token)
    expect(reuse.status).toBe(400)
    expect(await reuse.json()).toMatchObject({ error: 'invalid_grant' })
    expect((await mcpList(t, second.access_token)).status).toBe(401)
    expect((await refresh(t, client.client_id, second.refresh_token)).status).toBe(400)
  })

  test('revocation (RFC 7009) ends the grant; an unknown token is answered 200 too', async () => {
    const { client, code, verifier } = await connectClient(t, owner.token)
    const tokens = (await (await exchange(t, { code, clientId: client.client_id, verifier })).json()) as { access_token: string; refresh_token: string }
    expect((await raw(t, 'POST', '/oauth/revoke', { form: { token: 'nonsense', client_id: client.client_id } })).status).toBe(200)
    expect((await raw(t, 'POST', '/oauth/revoke', { form: { token: tokens.refresh_token, client_id: client.client_id } })).status).toBe(200)
    expect((await mcpList(t, tokens.access_token)).status).toBe(401)
  })

  test('token endpoint errors are RFC 6749 §5.2 JSON', async () => {
    const res = await raw(t, 'POST', '/oauth/token', { form: { grant_type: 'password', client_id: 'x' } })
    expect(res.status).toBe(400)
    expect(await res.json()).toMatchObject({ error: 'unsupported_grant_type' })
  })
})

describe('client-id metadata documents and registration bounds', () => {
  test('a metadata document on a loopback or private address is never fetched: an error page', async () => {
    const { challenge } = pkce()
    for (const clientId of ['https://127.0.0.1/client.json', 'https://10.0.0.5/client.json', 'https://localhost/client.json', 'https://[::1]/client.json']) {
      const res = await raw(t, 'GET', `/oauth/authorize?${authorizeQuery(t, clientId, challenge)}`)
      expect(res.status).toBe(400)
      expect(res.headers.get('location')).toBeNull()
    }
  })

  test('at most 20 registrations per address per hour: then 429 with Retry-After', async () => {
    const t0 = t.clock.now()
    // A fresh clock hour: the count is the hour's.
    t.clock.set(Math.ceil(t0 / 3_600_000) * 3_600_000 + 1000)
    for (let i = 0; i < 20; i++) await registerClient(t)
    const res = await raw(t, 'POST', '/oauth/register', { json: { client_name: 'one too many', redirect_uris: [REDIRECT] } })
    expect(res.status).toBe(429)
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(await res.json()).toMatchObject({ error: 'rate_limited' })
    t.clock.advance(3_600_000)
    expect((await registerClient(t)).client_id).toMatch(/^mcpc_/)
  })
})
