/**
 * A console form acts at most once. The owner double-clicks "Create", or the browser resends a POST
 * after a reload or Back: the same rendered form arrives twice. Each rendered form carries its own
 * one-time token (bound to the session), claimed atomically when the form is posted; the second
 * post of it is answered 409 with the page as it stands now, and nothing is done again. A form
 * without a token of this session is still refused as CSRF (403), and does nothing either.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { ConsoleClient, csrfOf, formOf } from '../helpers/console'
import { consentSandbox } from '../helpers/money'
import { vaultEnv } from '../helpers/vault'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { ...vaultEnv(), WEBHOOKS_ALLOW_INSECURE_LOOPBACK: '1' } })
})
afterAll(async () => {
  await t?.close()
})

async function signedIn() {
  const a = await t.signup()
  const c = new ConsoleClient(t)
  expect((await c.signIn(a.token)).status).toBe(303)
  return { a, c }
}

const agentsOf = async (token: string) => (await t.req('GET', '/v1/agents', { token })).body.agents as { id: string; name: string; state: string }[]
const agentNames = async (token: string) => (await agentsOf(token)).map((x) => x.name)
const tokensOf = (html: string) => [...html.matchAll(/name="csrf" value="([^"]+)"/g)].map((m) => m[1]!)
const CREATE = 'action="/console/agents"'

function expectAlreadySubmitted(r: { status: number; text: string }, page: string) {
  expect(r.status).toBe(409)
  expect(r.text).toContain('Already submitted: this form was sent before')
  expect(r.text).toContain(`<h1>${page}</h1>`)
}

describe('console forms act at most once', () => {
  test('the Create form posted twice with the same rendered token creates one agent', async () => {
    const { a, c } = await signedIn()
    const page = await c.get('/console/agents')
    const form = { ...formOf(page.text, CREATE), name: 'twice' }
    const first = await c.post('/console/agents', form)
    expect(first.status).toBe(200)
    expect(first.text).toContain('Agent twice created.')
    const second = await c.post('/console/agents', form)
    expect(await agentNames(a.token)).toEqual(['twice'])
    // The second post is told so, on the Agents page as it stands: the one agent, no token again.
    expectAlreadySubmitted(second, 'Agents')
    expect(second.text).not.toContain('output class="token"')
    expect(second.text.match(/<li class="agent"/g)?.length).toBe(1)
    // Its forms are fresh: creating another from it is a new, deliberate action.
    const third = await c.post('/console/agents', { ...formOf(second.text, CREATE), name: 'another' })
    expect(third.status).toBe(200)
    expect((await agentNames(a.token)).sort()).toEqual(['another', 'twice'])
  })

  test('two posts of the same form at the same moment: exactly one acts', async () => {
    const { a, c } = await signedIn()
    const form = { ...formOf((await c.get('/console/agents')).text, CREATE), name: 'racer' }
    const answers = await Promise.all(Array.from({ length: 5 }, () => c.post('/console/agents', form)))
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409])
    expect(await agentNames(a.token)).toEqual(['racer'])
  })

  test('every form of a rendered page carries a token of its own; each acts once, the others still act', async () => {
    const { a, c } = await signedIn()
    const one = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'one' } })
    const two = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'two' } })
    const page = await c.get('/console/agents')
    const tokens = tokensOf(page.text)
    // Sign-out, Kill and Revoke of each agent, Create.
    expect(tokens.length).toBe(6)
    expect(new Set(tokens).size).toBe(tokens.length)
    // Killing one from the page leaves the page's other forms good (a page restored by Back).
    const killOne = formOf(page.text, `action="/console/agents/${one.body.id}/kill"`)
    expect((await c.post(`/console/agents/${one.body.id}/kill`, killOne)).status).toBe(200)
    expect((await c.post(`/console/agents/${two.body.id}/kill`, formOf(page.text, `action="/console/agents/${two.body.id}/kill"`))).status).toBe(200)
    expect((await agentsOf(a.token)).map((x) => x.state)).toEqual(['killed', 'killed'])
    // The first Kill form again: refused as already submitted, even though a revive came between.
    const revive = await c.get('/console/agents')
    expect((await c.post(`/console/agents/${one.body.id}/revive`, formOf(revive.text, `action="/console/agents/${one.body.id}/revive"`))).status).toBe(200)
    expectAlreadySubmitted(await c.post(`/console/agents/${one.body.id}/kill`, killOne), 'Agents')
    expect((await agentsOf(a.token)).find((x) => x.id === one.body.id)!.state).toBe('active')
  })

  test('each form posted again does nothing again: policies, mandate, top-up, vault link, proposals, webhooks', async () => {
    // 23:00 HKT: the next HKT day, when the service would take another top-up, is within the session.
    t.clock.set(Date.UTC(2026, 5, 1, 15, 0, 0))
    const { a, c } = await signedIn()
    await consentSandbox(t, a.token, { threshold: 100, refill: 2000, ceiling: 100000 })
    const agent = await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'asker', daily_cap: 5 } })
    const propose = async (value: number) =>
      (await t.req('POST', '/v1/proposals', { token: agent.body.token, body: { kind: 'raise_daily_cap', value, agent_id: agent.body.id, reason: 'r' } })).body.id as string
    const balance = async () => (await t.req('GET', '/v1/balance', { token: a.token })).body.balance as number

    // Top-up: charged once. A day later the service would take another, and the resent form still does nothing.
    const money = await c.get('/console/money')
    const topup = { ...formOf(money.text, 'action="/console/money/topup"'), amount: '700' }
    expect((await c.post('/console/money/topup', topup)).status).toBe(200)
    expect(await balance()).toBe(1200)
    t.clock.advance(2 * 3600 * 1000)
    expectAlreadySubmitted(await c.post('/console/money/topup', topup), 'Money')
    expect(await balance()).toBe(1200)

    const cases: [string, string, string, string, Record<string, string>][] = [
      ['/console/policies', 'id="acct-cap"', '/console/policies', 'Policies', { daily_cap: '777' }],
      ['/console/money', 'action="/console/money/mandate"', '/console/money/mandate', 'Money', { threshold: '50' }],
      ['/console/keys', 'action="/console/keys/link"', '/console/keys/link', 'Keys', { provider: 'fakebyok' }],
      ['/console/webhooks', 'action="/console/webhooks"', '/console/webhooks', 'Webhooks', { url: 'http://127.0.0.1:9/hook' }],
    ]
    for (const [path, marker, action, name, fields] of cases) {
      const form = { ...formOf((await c.get(path)).text, marker), ...fields }
      const first = await c.post(action, form)
      expect({ action, status: first.status }).toEqual({ action, status: 200 })
      expectAlreadySubmitted(await c.post(action, form), name)
    }
    expect((await t.req('GET', '/v1/webhooks', { token: a.token })).body.url).toBe('http://127.0.0.1:9/hook')
    expect((await t.req('GET', '/v1/mandate', { token: a.token })).body.threshold).toBe(50)
    expect((await t.req('GET', '/v1/policies', { token: a.token })).body.account.daily_cap).toBe(777)

    // Proposals: Approve and Decline share one form, so after Approve the Decline of that form is refused too.
    const p1 = await propose(50)
    const p2 = await propose(60)
    const proposals = await c.get('/console/proposals')
    const f1 = formOf(proposals.text, `action="/console/proposals/${p1}/approve"`)
    expect((await c.post(`/console/proposals/${p1}/approve`, f1)).status).toBe(200)
    expectAlreadySubmitted(await c.post(`/console/proposals/${p1}/decline`, f1), 'Proposals')
    expect((await t.req('GET', `/v1/proposals/${p1}`, { token: a.token })).body.status).toBe('approved')
    const f2 = formOf(proposals.text, `action="/console/proposals/${p2}/approve"`)
    expect((await c.post(`/console/proposals/${p2}/decline`, f2)).status).toBe(200)
    expectAlreadySubmitted(await c.post(`/console/proposals/${p2}/approve`, f2), 'Proposals')
    expect((await t.req('GET', `/v1/proposals/${p2}`, { token: a.token })).body.status).toBe('declined')
    expect((await t.req('GET', '/v1/policies', { token: a.token })).body.agents[agent.body.id].daily_cap).toBe(50)

    // Remove endpoint: once.
    const del = formOf((await c.get('/console/webhooks')).text, 'action="/console/webhooks/delete"')
    expect((await c.post('/console/webhooks/delete', del)).status).toBe(200)
    expectAlreadySubmitted(await c.post('/console/webhooks/delete', del), 'Webhooks')
  })

  test('a refused form is used up too: resent, it is not tried again', async () => {
    const { a, c } = await signedIn()
    const form = { ...formOf((await c.get('/console/agents')).text, CREATE), name: 'n'.repeat(65) }
    expect((await c.post('/console/agents', form)).status).toBe(400)
    expectAlreadySubmitted(await c.post('/console/agents', { ...form, name: 'fixed' }), 'Agents')
    expect(await agentNames(a.token)).toEqual([])
  })

  test('a missing, malformed, forged or other session’s token is still FORBIDDEN, does nothing and uses up nothing', async () => {
    const { a, c } = await signedIn()
    const page = await c.get('/console/agents')
    const good = formOf(page.text, CREATE)
    const [nonce, mac] = good.csrf!.split('.') as [string, string]
    const flip = (s: string) => (s[0] === 'A' ? 'B' : 'A') + s.slice(1)
    // A second session of the same owner: its tokens are signed with its own secret.
    const other = new ConsoleClient(t)
    expect((await other.signIn(a.token)).status).toBe(303)
    const otherToken = csrfOf((await other.get('/console/agents')).text)
    const bad = ['', 'x', nonce, `${nonce}.`, `${flip(nonce)}.${mac}`, `${nonce}.${flip(mac)}`, `${nonce}.${mac}A`, otherToken, `${otherToken.split('.')[0]}.${mac}`]
    for (const csrf of bad) {
      const r = await c.post('/console/agents', { ...good, csrf, name: 'forged' })
      expect({ csrf, status: r.status }).toEqual({ csrf, status: 403 })
      expect(r.text).toContain('FORBIDDEN')
    }
    expect(await agentNames(a.token)).toEqual([])
    // The page's real token was not used up by any of them.
    expect((await c.post('/console/agents', { ...good, name: 'real' })).status).toBe(200)
    expect(await agentNames(a.token)).toEqual(['real'])
  })

  test('the claim is one key in the account’s slot, living no longer than a session; sign-out takes any of the page’s tokens', async () => {
    const { a, c } = await signedIn()
    const page = await c.get('/console/agents')
    expect((await c.post('/console/agents', { ...formOf(page.text, CREATE), name: 'k' })).status).toBe(200)
    const claims = await t.redis.keys(`${t.prefix}:*cform:${a.account_id}:*`)
    expect(claims.length).toBe(1)
    expect(claims[0]!.startsWith(`${t.s.ctx.keys.account(a.account_id).split(':acct:')[0]}:cform:`)).toBe(true)
    const ttl = await t.redis.pttl(claims[0]!)
    expect(ttl).toBeGreaterThan(0)
    expect(ttl).toBeLessThanOrEqual(12 * 3600 * 1000)
    // Sign-out is not a one-time action: a forged token does not end the session (the browser's
    // cookie is dropped either way), a token of the page does.
    const sessions = () => t.redis.keys(`${t.prefix}:*csess:${a.account_id}:*`)
    const cookie = c.jar.get('pab_console')!
    expect((await c.post('/console/sign-out', { csrf: 'x' })).status).toBe(303)
    expect((await sessions()).length).toBe(1)
    c.jar.set('pab_console', cookie)
    expect((await c.get('/console')).status).toBe(200)
    const signout = formOf(page.text, 'action="/console/sign-out"')
    expect((await c.post('/console/sign-out', signout)).status).toBe(303)
    expect(await sessions()).toEqual([])
  })
})
