/**
 * Spec conformance (interface 2.0.0), checked at the HTTP edge where an earlier pass found the
 * service saying something other than the spec. One test per deviation fixed.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
})
afterAll(async () => {
  await t.close()
})

describe('GET /openapi.json', () => {
  test('every templated path parameter is declared, and the proxy is /proxy/{provider}/{path} as the spec names it', async () => {
    const doc = (await t.req('GET', '/openapi.json')).body
    const paths = doc.paths as Record<string, Record<string, { parameters?: { name: string; in: string; required: boolean }[] }>>
    expect(Object.keys(paths)).toContain('/proxy/{provider}/{path}')
    expect(Object.keys(paths).filter((p) => p.includes('*'))).toEqual([])
    const undeclared: string[] = []
    for (const [p, ops] of Object.entries(paths)) {
      const names = [...p.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!)
      for (const [method, op] of Object.entries(ops)) {
        const declared = new Set((op.parameters ?? []).filter((x) => x.in === 'path' && x.required).map((x) => x.name))
        for (const n of names) if (!declared.has(n)) undeclared.push(`${method} ${p} {${n}}`)
      }
    }
    expect(undeclared).toEqual([])
  })
})
