/** `GET /` points a browser at the console and the documents, and a program at the same links as JSON. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

describe('GET /', () => {
  test('a browser gets a page linking the console, /llms-full.txt and /openapi.json', async () => {
    const r = await t.req('GET', '/', { headers: { accept: 'text/html,application/xhtml+xml' } })
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toStartWith('text/html')
    expect(r.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
    for (const href of ['/console', '/llms-full.txt', '/openapi.json']) expect(r.text).toContain(`href="${href}"`)
  })

  test('a program gets the same links as JSON, absolute under BASE_URL', async () => {
    const r = await t.req('GET', '/')
    expect(r.status).toBe(200)
    const body = r.body as { links: Record<string, string> }
    expect(body.links.console).toBe('http://pab.test/console')
    expect(body.links.openapi).toBe('http://pab.test/openapi.json')
    expect(body.links.llms_full).toBe('http://pab.test/llms-full.txt')
  })
})
