/**
 * The request id (X-Request-Id) and the one JSON log line per request: what it carries, and what it
 * must never carry (paths with codes, queries, tokens, bodies).
 */
import { afterAll, beforeAll, describe, expect, spyOn, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { LOG: 'json' } })
})
afterAll(async () => {
  await t.close()
})

describe('request id and the request log line', () => {
  test('every answer carries an X-Request-Id; a plain one from the caller is kept, anything else replaced', async () => {
    const quiet = spyOn(console, 'log').mockImplementation(() => {})
    try {
      await ids()
    } finally {
      quiet.mockRestore()
    }
  })

  async function ids() {
    const fresh = await t.req('GET', '/status')
    expect(fresh.headers.get('x-request-id')).toMatch(/^[A-Za-z0-9_-]{8,}$/)
    expect((await t.req('GET', '/status', { headers: { 'x-request-id': 'lb-42.abc' } })).headers.get('x-request-id')).toBe('lb-42.abc')
    for (const forged of ['x"}{"forged":1', 'has space', 'z'.repeat(65)]) {
      const r = await t.req('GET', '/status', { headers: { 'x-request-id': forged } })
      expect(r.headers.get('x-request-id')).toMatch(/^[A-Za-z0-9_-]{8,16}$/)
    }
  }

  test('one JSON line per request: id, route template, status, code, ms — never the path, query, token or body', async () => {
    const spy = spyOn(console, 'log').mockImplementation(() => {})
    let calls: unknown[][] = []
    let a = { token: '', account_id: '' }
    try {
      a = await t.signup()
      await t.req('POST', '/v1/call/test.echo', { token: a.token, body: { q: 'secret-payload' }, headers: { 'x-request-id': 'trace-1' } })
      await t.req('GET', '/rotate?code=rotation-secret-code')
      await t.req('GET', '/v1/balance', { token: 'sk_' + 'Z'.repeat(43) })
      calls = [...spy.mock.calls]
    } finally {
      spy.mockRestore()
    }
    const lines = calls.map((c) => JSON.parse(String(c[0]))).filter((l) => l.msg === 'request')
    expect(lines).toHaveLength(4)
    expect(lines[0]).toMatchObject({ route: '/v1/signup', status: 201 })
    lines.shift()
    expect(lines[0]).toMatchObject({ level: 'info', request_id: 'trace-1', method: 'POST', route: '/v1/call/:slug', status: 200 })
    expect(typeof lines[0].ms).toBe('number')
    expect(lines[2]).toMatchObject({ route: '/v1/balance', status: 401, error: 'UNAUTHORIZED' })
    const all = JSON.stringify(calls)
    for (const secret of ['secret-payload', 'rotation-secret-code', a.token, 'Z'.repeat(43), a.account_id]) expect(all).not.toContain(secret)
  })
})
