/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`) against /mcp: the server
 * scenarios that apply to a server without the suite's reference tools. Its CLI sends no bearer, so
 * a loopback hop adds one as a configured client would (every other header, Host and Origin
 * included, passes unchanged). Its CLI imports fs.globSync, which the machines' Node lacks: it runs
 * under Bun. The command for a running service is in the README.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { startTestApp, type TestApp } from '../helpers/harness'

const CLI = join(import.meta.dir, '..', '..', 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js')
/** dns-rebinding-protection: /mcp refuses a foreign Origin or (on a loopback BASE_URL) Host, docs/api.md §10. */
const SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'tools-call-error', 'dns-rebinding-protection']

let t: TestApp
let hop: ReturnType<typeof Bun.serve>

beforeAll(async () => {
  let base = ''
  let owner = ''
  hop = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      const url = new URL(req.url)
      const headers = new Headers(req.headers)
      headers.set('authorization', `Bearer ${owner}`)
      return fetch(`${base}${url.pathname}${url.search}`, { method: req.method, headers, body: req.body, redirect: 'manual' })
    },
  })
  // The hop is the service's address as the suite sees it: a loopback BASE_URL, as a local server
  // runs, whose Host and Origin rules the dns-rebinding scenario checks.
  t = await startTestApp({ env: { BASE_URL: `http://127.0.0.1:${hop.port}` } })
  base = await t.listen()
  owner = (await t.signup(`conformance-${t.prefix}@example.com`)).token
}, 30_000)
afterAll(async () => {
  hop?.stop(true)
  await t?.close()
})

async function run(scenario: string): Promise<{ code: number; out: string }> {
  const p = Bun.spawn([process.execPath, CLI, 'server', '--url', `http://127.0.0.1:${hop.port}/mcp`, '--scenario', scenario], { stdout: 'pipe', stderr: 'pipe' })
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()])
  return { code: await p.exited, out: out + err }
}

describe('MCP conformance (server scenarios)', () => {
  for (const scenario of SCENARIOS)
    test(scenario, async () => {
      const r = await run(scenario)
      if (r.code !== 0) console.error(r.out)
      expect(r.code).toBe(0)
    }, 60_000)
})
