/**
 * A browser page refused at the edge (a control character in a query value, a schema, a declared
 * body past MAX_BODY_BYTES, the per-IP limit, an unknown path) answers a page, as the page's own
 * errors do: the same status, the error code on it, nothing the caller sent echoed unescaped. The
 * owner console always answers pages (with the way back); the other pages give the JSON error body
 * to a client that asks for JSON, as their handlers do. The API keeps its JSON whatever it is sent.
 * Before: every such refusal was the API's JSON, and on the console a signed-in owner heard 401
 * "Missing or invalid bearer token" (auth first asked the console for a bearer).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp, type TestResponse } from '../helpers/harness'
import { ConsoleClient } from '../helpers/console'
import { browserSurface } from '../../src/pages/html'

let t: TestApp
let owner: { token: string; account_id: string }
let c: ConsoleClient
beforeAll(async () => {
  t = await startTestApp()
  owner = await t.signup()
  c = new ConsoleClient(t)
  await c.signIn(owner.token)
})
afterAll(async () => {
  await t.close()
})

/** A raw query key with markup in it: shown escaped, never as markup. */
const MARKUP = '%3Cscript%3Ealert(1)%3C%2Fscript%3E'

function isPage(r: TestResponse, status: number, code: string) {
  expect({ status: r.status, type: r.headers.get('content-type') }).toEqual({ status, type: 'text/html; charset=utf-8' })
  expect(r.text).toContain(`<code>${code}</code>`)
  expect(r.text).not.toContain('<script')
  expect(r.headers.get('cache-control')).toBe('no-store')
  expect(r.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
}

function isJson(r: TestResponse, status: number, code: string) {
  expect({ status: r.status, type: r.headers.get('content-type'), error: r.body.error }).toEqual({ status, type: 'application/json', error: code })
}

const big = { 'content-type': 'application/x-www-form-urlencoded', 'content-length': '99999999' }

describe('the owner console, refused at the edge', () => {
  test('signed in, a control character in a query value → 400 BAD_REQUEST as a console page with the way back', async () => {
    for (const path of ['/console?x=%01', '/console/activity?agent=%00', `/console/agents?${MARKUP}=%01`]) {
      const r = await c.get(path)
      isPage(r, 400, 'BAD_REQUEST')
      expect(r.text).toContain('<a href="/console">Back to the console</a>')
      expect(r.text).toContain('/console/console.css')
    }
    // The query key is named in the message, escaped.
    expect((await c.get(`/console/agents?${MARKUP}=%01`)).text).toContain('&#60;script&#62;alert(1)&#60;/script&#62;')
  })

  test('signed out, the same refusal is UNAUTHORIZED (auth first), as a page; the sign-in page is public and keeps its refusal', async () => {
    const anon = new ConsoleClient(t)
    isPage(await anon.get('/console?x=%01'), 401, 'UNAUTHORIZED')
    isPage(await anon.get(`/console/sign-in?${MARKUP}=%01`), 400, 'BAD_REQUEST')
    // A console page is a page even to a client that asks for JSON: the console has no JSON clients.
    const json = await t.app.handle(new Request('http://pab.test/console/sign-in?x=%01', { headers: { accept: 'application/json' } }))
    expect({ status: json.status, type: json.headers.get('content-type') }).toEqual({ status: 400, type: 'text/html; charset=utf-8' })
  })

  test('a form post with a declared body past MAX_BODY_BYTES → 413 as a page', async () => {
    const r = await c.post('/console/agents', { csrf: 'x', name: 'n' }, big)
    isPage(r, 413, 'BAD_REQUEST')
  })

  test('an unknown console path → 404 NOT_FOUND as a page', async () => {
    isPage(await c.get('/console/agnets'), 404, 'NOT_FOUND')
  })
})

describe('the other browser pages, refused at the edge', () => {
  test('a control character in a query value or the path → 400 as a page: /rotate, /topup, /mandate, /vault/:code', async () => {
    for (const path of ['/rotate?code=%01', `/topup?${MARKUP}=%01`, '/mandate?ref=%1b', '/vault/%01', '/topup/done?x=%7f']) {
      const r = await t.req('GET', path, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } })
      isPage(r, 400, 'BAD_REQUEST')
    }
    // What the schema refuses before the handler, too (RecoveryQuery: code at most 100 characters).
    isPage(await t.req('GET', `/rotate?code=${'x'.repeat(101)}`), 400, 'BAD_REQUEST')
  })

  test('a form post with a declared body past MAX_BODY_BYTES → 413 as a page', async () => {
    isPage(await t.req('POST', '/rotate', { headers: big, body: 'code=x' }), 413, 'BAD_REQUEST')
  })

  test('a client that asks for JSON (and not HTML) gets the JSON error body, as the pages answer their own errors', async () => {
    const r = await t.req('GET', '/rotate?code=%01', { headers: { accept: 'application/json' } })
    isJson(r, 400, 'BAD_REQUEST')
    expect(r.body.field).toBe('code')
  })

  test('past the per-IP limit → 429 RATE_LIMITED as a page, with Retry-After', async () => {
    const app = await startTestApp({ env: { RATE_LIMIT_PER_IP: '1' } })
    try {
      // The one request of the minute (its own page: no pack chosen → 404), then the refusal.
      expect((await app.req('GET', '/topup')).status).toBe(404)
      const r = await app.req('GET', '/topup?x=%01')
      isPage(r, 429, 'RATE_LIMITED')
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0)
    } finally {
      await app.close()
    }
  })
})

describe('the API keeps its JSON', () => {
  test('/v1, /mcp and the proxy answer the JSON error body, even to a browser', async () => {
    const browser = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' }
    const search = await t.req('GET', '/v1/search?q=%01', { headers: browser })
    isJson(search, 400, 'BAD_REQUEST')
    expect(search.body).toEqual({ error: 'BAD_REQUEST', message: search.body.message, field: 'q', expected: 'text without control characters or bidirectional overrides' })
    isJson(await t.req('GET', '/v1/balance?x=%01', { token: owner.token, headers: browser }), 400, 'BAD_REQUEST')
    isJson(await t.req('POST', '/v1/agents', { token: owner.token, headers: { ...browser, 'content-length': '99999999' }, body: '{}' }), 413, 'BAD_REQUEST')
    isJson(await t.req('GET', '/mcp?x=%01', { headers: browser }), 401, 'UNAUTHORIZED')
    isJson(await t.req('GET', '/v1/nowhere', { headers: browser }), 404, 'NOT_FOUND')
    isJson(await t.req('POST', '/proxy/fake/v1/echo', { token: owner.token, headers: { ...browser, 'content-length': '99999999' }, body: '{}' }), 413, 'BAD_REQUEST')
  })

  test('every route the app calls a page ("HTML" in its summary) is a browser surface; no API route is', () => {
    const pages = t.app.routes.filter((r) => String((r.hooks as { detail?: { summary?: string } } | undefined)?.detail?.summary ?? '').startsWith('HTML'))
    expect(pages.length).toBeGreaterThan(20)
    expect(pages.filter((r) => browserSurface(r.path.replace(/:\w+/g, 'x')) === null).map((r) => `${r.method} ${r.path}`)).toEqual([])
    const api = t.app.routes.filter((r) => /^\/(v1|mcp|proxy|admin|metrics|ops|webhooks|demo)(\/|$)/.test(r.path))
    expect(api.filter((r) => browserSurface(r.path.replace(/:\w+/g, 'x')) !== null).map((r) => `${r.method} ${r.path}`)).toEqual([])
  })
})
