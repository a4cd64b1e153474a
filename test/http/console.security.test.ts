/**
 * The owner console's guards: the session cookie's flags, the CSP and framing headers on every
 * page, CSRF tokens (a form without its token does nothing), agent tokens kept out, a rotated owner
 * token ending the session, sessions bound to their account, every reflected form field escaped,
 * the sign-in rate limit, a Policies form that never widens an allowlist it was not asked to change
 * (an allow-nothing `[]` and no allowlist `null` look alike in a text box), and forms held to the
 * API's bounds (the services check them, so the console is refused as REST is, in the same words).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { ConsoleClient, csrfOf, formOf } from '../helpers/console'
import { vaultEnv } from '../helpers/vault'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { ...vaultEnv(), WEBHOOKS_ALLOW_INSECURE_LOOPBACK: '1' } })
})
afterAll(async () => {
  await t?.close()
})

const PAGES = ['/console', '/console/agents', '/console/policies', '/console/activity', '/console/money', '/console/keys', '/console/proposals', '/console/webhooks']

async function signedIn() {
  const a = await t.signup()
  const c = new ConsoleClient(t)
  const r = await c.signIn(a.token)
  expect(r.status).toBe(303)
  expect(r.headers.get('location')).toBe('/console')
  return { a, c }
}

function expectConsoleHeaders(h: Headers) {
  const csp = h.get('content-security-policy') ?? ''
  expect(csp).toContain("frame-ancestors 'none'")
  expect(csp).toContain("default-src 'none'")
  expect(csp).not.toContain('unsafe-inline')
  expect(csp).not.toContain('script-src')
  expect(h.get('x-frame-options')).toBe('DENY')
}

describe('console security', () => {
  test('session cookie: HttpOnly, SameSite=Strict, Path=/console, Max-Age 12 h, no Secure over http', async () => {
    const a = await t.signup()
    const c = new ConsoleClient(t)
    const page = await c.get('/console/sign-in')
    expect(page.text).toContain('<label for="token">Owner token</label>')
    expect(page.text).toContain('>Sign in</button>')
    const r = await c.post('/console/sign-in', { csrf: csrfOf(page.text), token: a.token })
    const set = r.headers.getSetCookie().find((x) => x.startsWith('pab_console='))!
    expect(set).toBeDefined()
    const flags = set.split(';').map((x) => x.trim())
    expect(flags).toContain('HttpOnly')
    expect(flags).toContain('SameSite=Strict')
    expect(flags).toContain('Path=/console')
    expect(flags).toContain('Max-Age=43200')
    expect(flags).not.toContain('Secure')
  })

  test('the cookie is Secure when BASE_URL is https', async () => {
    const https = await startTestApp({ env: { BASE_URL: 'https://pab.example' } })
    try {
      const a = await https.signup()
      const c = new ConsoleClient(https)
      const r = await c.signIn(a.token)
      expect(r.status).toBe(303)
      for (const set of r.headers.getSetCookie()) expect(set.split(';').map((x) => x.trim())).toContain('Secure')
    } finally {
      await https.close()
    }
  })

  test('every console page sends the CSP with no script and frame-ancestors none, and X-Frame-Options DENY', async () => {
    const { c } = await signedIn()
    for (const p of PAGES) {
      const r = await c.get(p)
      expect(r.status).toBe(200)
      expectConsoleHeaders(r.headers)
      expect(r.text).not.toContain('<script')
      expect(r.text).not.toContain(' style=')
    }
    const anon = new ConsoleClient(t)
    expectConsoleHeaders((await anon.get('/console/sign-in')).headers)
  })

  test('without a session every page sends the browser to the sign-in form', async () => {
    const anon = new ConsoleClient(t)
    for (const p of PAGES) {
      const r = await anon.get(p)
      expect(r.status).toBe(303)
      expect(r.headers.get('location')).toBe('/console/sign-in')
    }
  })

  test('a form posted without its CSRF token (or with another session’s) is refused and changes nothing', async () => {
    const { a, c } = await signedIn()
    const agent = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'bot' } })
    const missing = await c.post(`/console/agents/${agent.body.id}/kill`, {})
    expect(missing.status).toBe(403)
    expect(missing.text).toContain('FORBIDDEN')
    const other = await signedIn()
    const foreignCsrf = csrfOf((await other.c.get('/console/agents')).text)
    const wrong = await c.post(`/console/agents/${agent.body.id}/kill`, { csrf: foreignCsrf })
    expect(wrong.status).toBe(403)
    const list = await t.req('GET', '/v1/agents', { token: a.token })
    expect(list.body.agents[0].state).toBe('active')
    expect((await t.req('POST', '/v1/call/test.echo', { token: agent.body.token, body: { q: 'x' } })).status).toBe(200)
    // The sign-in form has its own token too.
    const fresh = new ConsoleClient(t)
    await fresh.get('/console/sign-in')
    const noToken = await fresh.post('/console/sign-in', { token: a.token })
    expect(noToken.status).toBe(403)
    expect(noToken.headers.getSetCookie().some((x) => x.startsWith('pab_console='))).toBe(false)
  })

  test('an agent token cannot sign in; an unknown token neither', async () => {
    const a = await t.signup()
    const agent = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'bot' } })
    const c = new ConsoleClient(t)
    const r = await c.signIn(agent.body.token)
    expect(r.status).toBe(403)
    expect(r.text).toContain('agent token')
    expect(c.jar.has('pab_console')).toBe(false)
    const bad = await c.signIn('sk_' + 'A'.repeat(43))
    expect(bad.status).toBe(401)
    expect(c.jar.has('pab_console')).toBe(false)
  })

  test('rotating the owner token ends the session (and a rotation back does not revive it)', async () => {
    const { a, c } = await signedIn()
    expect((await c.get('/console')).status).toBe(200)
    const rotated = await t.req('POST', '/v1/token/rotate', { token: a.token })
    expect(rotated.status).toBe(200)
    const after = await c.get('/console')
    expect(after.status).toBe(303)
    expect(after.headers.get('location')).toBe('/console/sign-in')
    const keys = await t.redis.keys(`${t.prefix}:*csess:${a.account_id}:*`)
    expect(keys).toEqual([])
    // The new token signs in.
    const again = new ConsoleClient(t)
    expect((await again.signIn(rotated.body.token)).status).toBe(303)
  })

  test('a session lasts 12 hours by the app clock', async () => {
    const { c } = await signedIn()
    t.clock.advance(12 * 3600 * 1000 - 1000)
    expect((await c.get('/console')).status).toBe(200)
    t.clock.advance(2000)
    expect((await c.get('/console')).status).toBe(303)
  })

  test("a session acts only on its own account: another account's agent is NOT_FOUND and untouched", async () => {
    const { c } = await signedIn()
    const b = await t.signup()
    const theirs = await t.req('POST', '/v1/agents', { token: b.token, body: { name: 'theirs' } })
    const r = await c.submit('/console/agents', `/console/agents/${theirs.body.id}/kill`, {})
    expect(r.status).toBe(404)
    expect(r.text).toContain('NOT_FOUND')
    expect((await t.req('GET', '/v1/agents', { token: b.token })).body.agents[0].state).toBe('active')
  })

  test('every form field that comes back on a page is HTML-escaped', async () => {
    const { a, c } = await signedIn()
    const evil = `<img src=x onerror=alert(1)>"'&`
    const escaped = '&#60;img src=x onerror=alert(1)&#62;&#34;&#39;&#38;'
    const agent = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'plain' } })
    const posts: [string, string, Record<string, string>][] = [
      ['/console/agents', '/console/agents', { name: evil, daily_cap: '', per_call_max: '', allowlist: '' }],
      ['/console/agents', '/console/agents', { name: 'x', daily_cap: evil, per_call_max: evil, allowlist: evil }],
      ['/console/policies', '/console/policies', { daily_cap: evil, allowlist: evil }],
      ['/console/policies', '/console/policies', { agent: agent.body.id, daily_cap: '', per_call_max: '', allowlist: `search.*\n${evil}` }],
      ['/console/policies', '/console/policies', { agent: evil, daily_cap: '5' }],
      ['/console/money', '/console/money/mandate', { threshold: evil, refill: evil, ceiling: evil }],
      ['/console/money', '/console/money/topup', { amount: evil }],
      ['/console/keys', '/console/keys/link', { provider: evil }],
      ['/console/webhooks', '/console/webhooks', { url: evil }],
      ['/console/webhooks', '/console/webhooks', { url: `http://127.0.0.1:9/${encodeURIComponent(evil)}?q=${evil}` }],
    ]
    for (const [page, action, fields] of posts) {
      const r = await c.submit(page, action, fields)
      expect(r.status).toBeLessThan(500)
      expect(r.text).not.toContain('<img src=x')
      expect(r.text).not.toContain(`"'&`)
    }
    // The name did come back, escaped, on the agents page.
    expect((await c.get('/console/agents')).text).toContain(escaped)
    const filtered = await c.get(`/console/activity?${new URLSearchParams({ agent: evil, route: evil, outcome: evil })}`)
    expect(filtered.status).toBe(200)
    expect(filtered.text).not.toContain('<img src=x')
    expect(filtered.text).toContain(`value="${escaped}"`)
  })

  test("saving an agent's cap on the Policies page keeps its allow-nothing allowlist ([])", async () => {
    const { a, c } = await signedIn()
    const agent = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'boxed', allowlist: [] } })
    expect(agent.status).toBe(201)
    const call = () => t.req('POST', '/v1/call/test.echo', { token: agent.body.token, body: { q: 'x' } })
    expect((await call()).body.rule).toBe('agent_allowlist')
    const page = await c.get('/console/policies')
    // The agent's form with only its textarea sent back (the box that says which state holds left out).
    const form = page.text.slice(page.text.indexOf(`name="agent" value="${agent.body.id}"`))
    const textarea = /<textarea[^>]*>([^<]*)<\/textarea>/.exec(form)![1]!
    const r = await c.post('/console/policies', { csrf: csrfOf(page.text), agent: agent.body.id, daily_cap: '5', per_call_max: '', allowlist: textarea })
    expect(r.status).toBe(200)
    const pol = await t.req('GET', '/v1/policies', { token: a.token })
    expect(pol.body.agents[agent.body.id].daily_cap).toBe(5)
    expect(pol.body.agents[agent.body.id].allowlist).toEqual([])
    expect((await call()).body.rule).toBe('agent_allowlist')
    // And the whole form, as a browser sends it: still allow-nothing.
    const shown = await c.get('/console/policies')
    expect(formOf(shown.text, `name="agent" value="${agent.body.id}"`).allow_all).toBeUndefined()
    const again = await c.post('/console/policies', { ...formOf(shown.text, `name="agent" value="${agent.body.id}"`), daily_cap: '6' })
    expect(again.status).toBe(200)
    expect((await t.req('GET', '/v1/policies', { token: a.token })).body.agents[agent.body.id]).toMatchObject({ daily_cap: 6, allowlist: [] })
    expect((await call()).body.rule).toBe('agent_allowlist')
  })

  test("saving the account cap on the Policies page keeps the account's allow-nothing allowlist ([])", async () => {
    const { a, c } = await signedIn()
    expect((await t.req('PUT', '/v1/policies', { token: a.token, body: { account: { allowlist: [] } } })).status).toBe(200)
    const page = await c.get('/console/policies')
    const textarea = /<textarea id="acct-allow"[^>]*>([^<]*)<\/textarea>/.exec(page.text)![1]!
    const r = await c.post('/console/policies', { csrf: csrfOf(page.text), daily_cap: '100', allowlist: textarea })
    expect(r.status).toBe(200)
    expect((await t.req('GET', '/v1/policies', { token: a.token })).body.account.allowlist).toEqual([])
    const shown = await c.get('/console/policies')
    const again = await c.post('/console/policies', { ...formOf(shown.text, 'id="acct-cap"'), daily_cap: '200' })
    expect(again.status).toBe(200)
    expect((await t.req('GET', '/v1/policies', { token: a.token })).body.account).toMatchObject({ daily_cap: 200, allowlist: [] })
  })

  test('the Policies page says whether an allowlist is absent or allows nothing; only its box widens one, and a form changes only what its owner changed', async () => {
    const { a, c } = await signedIn()
    const agent = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'open' } })
    const call = () => t.req('POST', '/v1/call/test.echo', { token: agent.body.token, body: { q: 'x' } })
    const at = `name="agent" value="${agent.body.id}"`
    const allowlist = async () => (await t.req('GET', '/v1/policies', { token: a.token })).body.agents[agent.body.id].allowlist
    const section = (html: string) => html.slice(html.indexOf(at), html.indexOf('</form>', html.indexOf(at)))

    let page = await c.get('/console/policies')
    expect(section(page.text)).toContain('data-allowlist="none"')
    expect(section(page.text)).toContain('No allowlist (allow everything)')
    expect(formOf(page.text, at).allow_all).toBe('1')
    // Saved as shown (box ticked): still no allowlist.
    expect((await c.post('/console/policies', { ...formOf(page.text, at), daily_cap: '50' })).status).toBe(200)
    expect(await allowlist()).toBeNull()
    // Unticked with no pattern: allow nothing.
    page = await c.get('/console/policies')
    const { allow_all: _, ...unticked } = formOf(page.text, at)
    expect((await c.post('/console/policies', unticked)).status).toBe(200)
    expect(await allowlist()).toEqual([])
    expect((await call()).body.rule).toBe('agent_allowlist')
    page = await c.get('/console/policies')
    expect(section(page.text)).toContain('data-allowlist="nothing"')
    expect(section(page.text)).toContain('Allows nothing')
    // Ticked with patterns says two things at once: refused, nothing changes.
    const both = await c.post('/console/policies', { ...formOf(page.text, at), allow_all: '1', allowlist: 'test.*' })
    expect(both.status).toBe(400)
    expect(both.text).toContain('BAD_REQUEST')
    expect(await allowlist()).toEqual([])
    // Ticked: no allowlist again, the agent calls (from the refusal's page: a form acts once).
    expect((await c.post('/console/policies', { ...formOf(both.text, at), allow_all: '1' })).status).toBe(200)
    expect(await allowlist()).toBeNull()
    expect((await call()).status).toBe(200)
    // A page loaded before an API change, saved for its cap, leaves the API's allowlist.
    page = await c.get('/console/policies')
    expect((await t.req('PUT', '/v1/policies', { token: a.token, body: { agents: { [agent.body.id]: { allowlist: [] } } } })).status).toBe(200)
    expect((await c.post('/console/policies', { ...formOf(page.text, at), daily_cap: '60' })).status).toBe(200)
    expect((await t.req('GET', '/v1/policies', { token: a.token })).body.agents[agent.body.id]).toMatchObject({ daily_cap: 60, allowlist: [] })
    expect((await call()).body.rule).toBe('agent_allowlist')
  })

  test('the console refuses an agent name the API refuses (empty, or over 64 characters)', async () => {
    const { a, c } = await signedIn()
    expect((await t.req('POST', '/v1/agents', { token: a.token, body: { name: '' } })).status).toBe(400)
    expect((await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'n'.repeat(65) } })).status).toBe(400)
    const empty = await c.submit('/console/agents', '/console/agents', { name: '   ', daily_cap: '', per_call_max: '', allowlist: '' })
    const long = await c.submit('/console/agents', '/console/agents', { name: 'n'.repeat(5000), daily_cap: '', per_call_max: '', allowlist: '' })
    const list = (await t.req('GET', '/v1/agents', { token: a.token })).body.agents
    expect({ empty: empty.status, long: long.status, agents: list.length }).toEqual({ empty: 400, long: 400, agents: 0 })
    // Shown as the page shows any refusal, in the API's words.
    const api = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'n'.repeat(65) } })
    expect(long.text).toContain(`${api.body.error}: ${api.body.message}`)
    expect((await c.get('/console/agents')).text).toContain('maxlength="64"')
  })

  test("caps over 10^12 and allowlists past the API's bounds are refused on the console as on the API, naming the same field", async () => {
    const { a, c } = await signedIn()
    const agent = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'bounded' } })
    const id = agent.body.id
    const tooMany = Array.from({ length: 101 }, (_, i) => `s${i}.*`)
    const tooLong = `proxy:${'p'.repeat(64)}/${'m'.repeat(80)}`
    const cases: [Record<string, unknown>, string, Record<string, string>][] = [
      [{ agents: { [id]: { daily_cap: 1e12 + 1 } } }, '/console/policies', { agent: id, daily_cap: String(1e12 + 1), per_call_max: '' }],
      [{ agents: { [id]: { per_call_max: 1e12 + 1 } } }, '/console/policies', { agent: id, daily_cap: '', per_call_max: String(1e12 + 1) }],
      [{ account: { daily_cap: 1e12 + 1 } }, '/console/policies', { daily_cap: String(1e12 + 1) }],
      [{ agents: { [id]: { allowlist: tooMany } } }, '/console/policies', { agent: id, daily_cap: '', per_call_max: '', allowlist: tooMany.join('\n') }],
      [{ account: { allowlist: [tooLong] } }, '/console/policies', { daily_cap: '100', allowlist: tooLong }],
    ]
    for (const [body, action, fields] of cases) {
      const api = await t.req('PUT', '/v1/policies', { token: a.token, body })
      expect(api.status).toBe(400)
      const r = await c.submit('/console/policies', action, fields)
      expect(r.status).toBe(400)
      expect(r.text).toContain(`BAD_REQUEST: Malformed request: ${api.body.field} must be`)
    }
    const created = await c.submit('/console/agents', '/console/agents', { name: 'big', daily_cap: String(1e12 + 1), per_call_max: '', allowlist: '' })
    expect(created.status).toBe(400)
    expect(created.text).toContain('BAD_REQUEST: Malformed request: daily_cap must be one of: integer, minimum 0, maximum 1000000000000 | null.')
    const pol = await t.req('GET', '/v1/policies', { token: a.token })
    expect(pol.body.agents[id]).toMatchObject({ daily_cap: null, per_call_max: null, allowlist: null })
    expect(pol.body.account.allowlist).toBeNull()
    expect((await t.req('GET', '/v1/agents', { token: a.token })).body.agents.map((x: { name: string }) => x.name)).toEqual(['bounded'])
  })

  test('a signed-in page counts against the owner token rate limit, shared with the API', async () => {
    const limited = await startTestApp({ env: { RATE_LIMIT_PER_TOKEN: '6' } })
    try {
      // A second into a minute: the wait told below ends on a minute's first millisecond.
      limited.clock.set(Math.ceil(Date.now() / 60_000) * 60_000 + 1_000)
      const a = await limited.signup()
      const c = new ConsoleClient(limited)
      expect((await c.signIn(a.token)).status).toBe(303) // the sign-in's own admission counts once
      const statuses: number[] = []
      for (let i = 0; i < 5; i++) statuses.push((await c.get('/console/agents')).status)
      expect(statuses).toEqual([200, 200, 200, 200, 200])
      const page = await c.get('/console/agents')
      expect(page.status).toBe(429)
      expect(page.headers.get('retry-after')).toBeTruthy()
      // The same window as the token's API requests: the API is refused too.
      expect((await limited.req('GET', '/v1/balance', { token: a.token })).body.error).toBe('RATE_LIMITED')
      // Retry-After is when a page is served again (console-session.lua), not the end of the minute.
      const wait = Number(page.headers.get('retry-after'))
      limited.clock.advance((wait - 1) * 1000)
      expect((await c.get('/console/agents')).status).toBe(429)
      limited.clock.advance(1000)
      expect((await c.get('/console/agents')).status).toBe(200)
    } finally {
      await limited.close()
    }
  })

  test('sign-in is rate-limited per client IP', async () => {
    const limited = await startTestApp({ env: { RATE_LIMIT_PER_IP: '3' } })
    try {
      const c = new ConsoleClient(limited)
      const page = await c.get('/console/sign-in')
      const csrf = csrfOf(page.text)
      const statuses: number[] = []
      for (let i = 0; i < 5; i++) statuses.push((await c.post('/console/sign-in', { csrf, token: 'sk_' + 'B'.repeat(43) })).status)
      expect(statuses.slice(-1)[0]).toBe(429)
      expect(statuses.filter((x) => x === 429).length).toBeGreaterThanOrEqual(2)
      // Even the right token waits out the window.
      const a = await limited.req('POST', '/v1/signup', { body: { email: `rl-${limited.prefix}@example.com` }, headers: { 'x-forwarded-for': '10.9.9.9' } })
      const blocked = await c.post('/console/sign-in', { csrf, token: a.body.token })
      expect(blocked.status).toBe(429)
      expect(blocked.headers.get('retry-after')).toBeTruthy()
    } finally {
      await limited.close()
    }
  })
})
