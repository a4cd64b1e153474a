/**
 * The edge refuses bad bytes and answers every refusal as the spec's table says:
 * - control characters and lone surrogates in any free-text field (body, query, form) → BAD_REQUEST
 *   naming the field; multi-line free text (a support summary, a founder note) may hold \n and \t;
 * - a database failure is logged without the statement's parameters;
 * - on a protected operation the bearer is checked before the body (every bearer operation of
 *   /openapi.json, walked);
 * - the Bearer scheme is case-insensitive (RFC 7235);
 * - a body that is not a JSON object where one is expected is BAD_REQUEST, even on optional bodies.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { startTestApp, type TestApp } from '../helpers/harness'

const ADMIN = 'founder-secret-0123456789abcdef'
const METRICS = 'metrics-secret-0123456789abcdef'
const TG_SECRET = 'telegram-secret-0123456789'
const NOT_CONTROL = 'text without control characters or bidirectional overrides'

let t: TestApp
let owner: { token: string; account_id: string }
beforeAll(async () => {
  t = await startTestApp({ env: { ADMIN_TOKEN: ADMIN, METRICS_TOKEN: METRICS, TELEGRAM_WEBHOOK_SECRET: TG_SECRET, TELEGRAM_BOT_TOKEN: '123:abc' } })
  owner = await t.signup()
})
afterAll(async () => {
  await t.close()
})

const email = (tag: string) => `${tag}-${t.prefix}@example.com`

function refused(r: { status: number; body: any }, field: string) {
  expect({ status: r.status, error: r.body.error, field: r.body.field }).toEqual({ status: 400, error: 'BAD_REQUEST', field })
}

describe('control characters and lone surrogates', () => {
  test('signup origin: NUL, newline, tab, DEL, C1 and a lone surrogate are refused, naming the field', async () => {
    for (const origin of ['x\u0000y', 'x\ny', 'x\ty', 'x\u007fy', 'x\u0085y', 'x\ud800y', 'x\udc00']) {
      const r = await t.req('POST', '/v1/signup', { body: { email: email('ctl'), origin } })
      refused(r, 'origin')
      expect(r.body.expected).toBe(NOT_CONTROL)
    }
    // A surrogate pair (an emoji) is text.
    expect((await t.req('POST', '/v1/signup', { body: { email: email('emoji'), origin: 'from 🚀 land' } })).status).toBe(201)
  })

  test('signup email with NUL', async () => {
    refused(await t.req('POST', '/v1/signup', { body: { email: 'p\u0000@example.com' } }), 'email')
  })

  test('agent name "\\u0000"', async () => {
    refused(await t.req('POST', '/v1/agents', { token: owner.token, body: { name: '\u0000' } }), 'name')
    refused(await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'bot\nroot' } }), 'name')
  })

  test('a one-line field refuses bidirectional overrides and isolates; a right-to-left name and its marks pass', async () => {
    for (const name of ['billing\u202eexe.txt', 'a\u202ab', 'a\u202db', 'a\u2066b\u2069', 'a\u2068b']) {
      const r = await t.req('POST', '/v1/agents', { token: owner.token, body: { name } })
      refused(r, 'name')
      expect(r.body.expected).toBe(NOT_CONTROL)
    }
    for (const name of ['סוכן-1', 'وكيل\u200f-2', 'agent\u200e-3', 'a\u061cb']) expect((await t.req('POST', '/v1/agents', { token: owner.token, body: { name } })).status).toBe(201)
    // Prose keeps them: a support summary may quote right-to-left text as written.
    expect((await t.req('POST', '/v1/support', { token: owner.token, body: { category: 'bug', summary: 'quoted: \u202bשלום\u202c' } })).status).toBe(201)
  })

  test('support summary: NUL and C1 refused (no 500), newline and tab allowed', async () => {
    refused(await t.req('POST', '/v1/support', { token: owner.token, body: { category: 'bug', summary: 'a\u0000b' } }), 'summary')
    refused(await t.req('POST', '/v1/support', { token: owner.token, body: { category: 'bug', summary: 'a\u009bb' } }), 'summary')
    refused(await t.req('POST', '/v1/support', { token: owner.token, body: { category: 'bug', summary: 'a\rb' } }), 'summary')
    refused(await t.req('POST', '/v1/support', { token: owner.token, body: { category: 'bug', slug: 'web\nsearch', summary: 'ok' } }), 'slug')
    const ok = await t.req('POST', '/v1/support', { token: owner.token, body: { category: 'bug', summary: 'line one\n\tline two' } })
    expect(ok.status).toBe(201)
    // The founder's note is multi-line too, and refuses NUL.
    const note = (n: string) => t.req('PATCH', `/admin/support/${ok.body.id}`, { token: ADMIN, body: { note: n } })
    refused(await note('x\u0000'), 'note')
    expect((await note('seen\nthanks')).status).toBe(200)
  })

  test('search q in the query string', async () => {
    refused(await t.req('GET', '/v1/search?q=a%00b'), 'q')
    refused(await t.req('GET', '/v1/search?q=a%0Ab'), 'q')
    expect((await t.req('GET', '/v1/search?q=echo')).status).toBe(200)
  })

  test('nested fields: a policy allowlist pattern, an agent id key, a webhook url', async () => {
    refused(await t.req('PUT', '/v1/policies', { token: owner.token, body: { account: { allowlist: ['web.search', 'x\u0000'] } } }), 'account.allowlist.1')
    refused(await t.req('PUT', '/v1/policies', { token: owner.token, body: { agents: { 'agt_\u0001': { daily_cap: 1 } } } }), 'agents.agt_\u0001')
    refused(await t.req('PUT', '/v1/webhooks', { token: owner.token, body: { url: 'https://example.com/\u0000' } }), 'url')
  })

  test('vault link provider, a path parameter, a form field of a page', async () => {
    refused(await t.req('POST', '/v1/keys/link', { token: owner.token, body: { provider: 'fake\u0000' } }), 'provider')
    refused(await t.req('DELETE', '/v1/keys/fa%00ke', { token: owner.token }), 'provider')
    const ref = new URL((await t.req('GET', '/v1/mandate', { token: owner.token })).body.enable_url).search
    const form = await t.req('POST', `/mandate${ref}`, {
      body: 'card=4242424242424242&threshold=1%00',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    })
    refused(form, 'threshold')
  })

  test('a capability call param', async () => {
    refused(await t.req('POST', '/v1/call/test.echo', { token: owner.token, body: { q: 'hi\u0000' } }), 'q')
    // Call params are free text for the provider: newlines pass.
    expect((await t.req('POST', '/v1/call/test.echo', { token: owner.token, body: { q: 'hi\nthere' } })).status).toBe(200)
  })

  test('the operator channel: a Telegram message text with NUL', async () => {
    const r = await t.req('POST', '/ops/telegram', {
      headers: { 'x-telegram-bot-api-secret-token': TG_SECRET },
      body: { update_id: 1, message: { chat: { id: 5 }, text: '/status\u0000' } },
    })
    refused(r, 'message.text')
  })
})

describe('a database failure', () => {
  test('is answered INTERNAL and logged without the statement parameters', async () => {
    const lines: string[] = []
    const log = t.s.log
    const error = log.error.bind(log)
    log.error = (msg, fields = {}) => {
      lines.push(JSON.stringify({ msg, ...fields }))
      error(msg, fields)
    }
    const sql = postgres(t.db.url, { max: 1, onnotice: () => {} })
    await sql`ALTER TABLE support_problems RENAME TO support_problems_away`
    try {
      const r = await t.req('POST', '/v1/support', { token: owner.token, body: { category: 'bug', summary: 'secret-summary-7731' } })
      expect(r.status).toBe(500)
      expect(r.body.error).toBe('INTERNAL')
    } finally {
      await sql`ALTER TABLE support_problems_away RENAME TO support_problems`
      await sql.end()
      log.error = error
    }
    expect(lines.length).toBeGreaterThan(0)
    for (const l of lines) {
      expect(l).not.toContain('secret-summary-7731')
      expect(l).not.toContain(owner.account_id)
    }
  })
})

describe('auth comes first', () => {
  test('POST /v1/keys/link without a token → 401, not 400', async () => {
    const r = await t.req('POST', '/v1/keys/link', { body: {} })
    expect(r.status).toBe(401)
    expect(r.body.error).toBe('UNAUTHORIZED')
  })

  test('every bearer operation of /openapi.json: no bearer or an unknown one, empty or invalid body → 401', async () => {
    const doc = (await t.req('GET', '/openapi.json')).body as { paths: Record<string, Record<string, { security?: Record<string, unknown>[] }>> }
    const fill = (path: string) =>
      path
        .replace('{slug}', 'test.echo')
        .replace('{provider}', 'fake')
        .replace('{id}', 'x')
        .replace('{code}', 'x')
        .replace('{path}', 'v1/echo')
    const bearers: (string | undefined)[] = [undefined, 'sk_' + 'A'.repeat(43), 'ak_' + 'B'.repeat(43), 'garbage']
    const bodies: (string | undefined)[] = [undefined, '{', '{"zz_unknown": "\\u0000", "name": 5}', '[]']
    const wrong: string[] = []
    let walked = 0
    for (const [path, ops] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(ops)) {
        // Console pages ride a session cookie (test/http/console.security.test.ts covers them).
        if (!op.security?.some((scheme) => 'bearer' in scheme)) continue
        walked++
        for (const token of bearers)
          for (const body of bodies) {
            // Without a bearer, {email} is the lost-token path of /v1/token/rotate (docs/api.md §2).
            if (path === '/v1/token/rotate' && token === undefined && body !== undefined) continue
            const r = await t.req(method.toUpperCase(), fill(path), { token, body })
            if (r.status !== 401 || r.body.error !== 'UNAUTHORIZED') wrong.push(`${method} ${path} bearer=${token?.slice(0, 3)} body=${body} → ${r.status} ${r.body.error}`)
          }
      }
    expect(walked).toBeGreaterThan(30)
    expect(wrong).toEqual([])
  })
})

describe('the Bearer scheme is case-insensitive', () => {
  test('bearer, BEARER and Bearer all authenticate, on every kind of route', async () => {
    for (const scheme of ['bearer', 'BEARER', 'bEaReR']) {
      const auth = { authorization: `${scheme} ${owner.token}` }
      expect((await t.req('GET', '/v1/balance', { headers: auth })).status).toBe(200)
      expect((await t.req('GET', '/v1/agents', { headers: auth })).status).toBe(200)
      expect((await t.req('GET', '/admin/parked', { headers: { authorization: `${scheme} ${ADMIN}` } })).status).toBe(200)
      expect((await t.req('GET', '/metrics', { headers: { authorization: `${scheme} ${METRICS}` } })).status).toBe(200)
    }
    // A scheme glued to the token is no bearer.
    expect((await t.req('GET', '/v1/balance', { headers: { authorization: `Bearer${owner.token}` } })).status).toBe(401)
  })
})

describe('bodies that are not the JSON object a route expects', () => {
  test('optional-body routes: malformed JSON, an array, null → 400 field body; empty stays accepted', async () => {
    const topup = (body?: string) => t.req('POST', '/v1/topup', { token: owner.token, body })
    for (const body of ['{', '[]', 'null', '5', '"x"']) refused(await topup(body), 'body')
    // Empty: the mandate's refill, which this account has none of.
    expect((await topup()).status).toBe(402)
    refused(await t.req('PUT', '/v1/policies', { token: owner.token, body: '[]' }), 'body')
    refused(await t.req('POST', '/v1/token/rotate', { token: owner.token, body: '{' }), 'body')
  })

  test('every route with a body schema parses it strictly (a new route cannot miss it)', () => {
    const routes = t.app.routes as unknown as { method: string; path: string; hooks?: { body?: unknown; parse?: { fn: unknown }[] } }[]
    const withBody = routes.filter((r) => r.hooks?.body)
    expect(withBody.length).toBeGreaterThan(10)
    const loose = withBody.filter((r) => !r.hooks?.parse?.some((p) => typeof p.fn === 'function' && p.fn.name === 'jsonObject'))
    expect(loose.map((r) => `${r.method} ${r.path}`)).toEqual([])
  })

  test('a JSON route given another content type → 400 field body', async () => {
    const form = await t.req('POST', '/v1/signup', { body: `email=${encodeURIComponent(email('form'))}`, headers: { 'content-type': 'application/x-www-form-urlencoded' } })
    refused(form, 'body')
    const text = await t.req('POST', '/v1/signup', { body: JSON.stringify({ email: email('text') }), headers: { 'content-type': 'text/plain' } })
    refused(text, 'body')
    const none = await t.app.handle(new Request('http://pab.test/v1/signup', { method: 'POST', body: new Blob([JSON.stringify({ email: email('none') })]) }))
    expect(none.status).toBe(400)
    expect(((await none.json()) as { field: string }).field).toBe('body')
    // JSON with a charset parameter is JSON.
    const ok = await t.req('POST', '/v1/signup', { body: { email: email('charset') }, headers: { 'content-type': 'application/json; charset=utf-8' } })
    expect(ok.status).toBe(201)
  })
})
