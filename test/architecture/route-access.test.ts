/**
 * Who may call a route is declared once, in the route table (src/route-access.ts; docs/architecture.md,
 * "Rules the tests hold"): every route the app registers has exactly one entry, and every entry
 * names a registered route. The check is also fed small fakes, so this test is seen to fail when
 * a route is added without an entry or an entry outlives its route.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../helpers/harness'
import { ROUTE_ACCESS, tableMismatches } from '../../src/route-access'
import { OPERATOR_ONLY } from '../../src/admission'
import { toolAccessOf } from '../../src/mcp/service-tools'

let t: TestApp
let plain: TestApp
beforeAll(async () => {
  // The demo provider's upstream routes are mounted only while it is on (on a loopback BASE_URL).
  t = await startTestApp({ env: { BASE_URL: 'http://127.0.0.1:1', DEMO_PROVIDER: 'auto' } })
  // The HTTP sweeps run on the usual test app (its BASE_URL is the host the requests name, as /mcp wants).
  plain = await startTestApp()
})
afterAll(async () => {
  await t.close()
  await plain.close()
})

const routesOf = (app: TestApp['app']) => app.routes as unknown as { method: string; path: string }[]

describe('the route table', () => {
  test('every registered route has exactly one entry, and every entry names a registered route', () => {
    expect(routesOf(t.app).some((r) => r.path === '/demo/echo')).toBe(true)
    expect(tableMismatches(routesOf(t.app))).toEqual([])
  })

  test('a route with no entry, an entry with no route, and a route registered twice are caught', () => {
    const table = { 'GET /a': 'member', 'POST /gone': 'operator' } as const
    const routes = [
      { method: 'GET', path: '/a' },
      { method: 'PUT', path: '/new' },
      { method: 'PUT', path: '/new' },
    ]
    expect(tableMismatches(routes, table)).toEqual(['PUT /new: registered 2 times', 'PUT /new: a route with no entry', 'POST /gone: an entry that names no route'])
    expect(tableMismatches([{ method: 'GET', path: '/a' }, { method: 'POST', path: '/gone' }], table)).toEqual([])
  })

  test("the app's routes against the table less one entry: the route is named", () => {
    const { ['PUT /v1/policies']: _, ...less } = ROUTE_ACCESS
    expect(tableMismatches(routesOf(t.app), less)).toEqual(['PUT /v1/policies: a route with no entry'])
  })

  test('the operator-only surfaces the admission refuses to an agent token are the table\'s', () => {
    expect([...OPERATOR_ONLY].sort()).toEqual(Object.keys(ROUTE_ACCESS).filter((r) => ROUTE_ACCESS[r] === 'operator' || ROUTE_ACCESS[r] === 'operator-or-email').sort())
  })
})

describe("MCP tools admit as the table's entry of the route they adapt", () => {
  test('an operator-only route gives an owner-only tool, a paid call a paid one, a public or member route a member one', () => {
    expect(toolAccessOf('PUT /v1/policies')).toBe('operator')
    expect(toolAccessOf('POST /v1/agents/:id/revive')).toBe('operator')
    expect(toolAccessOf('POST /v1/call/:slug')).toBe('paid')
    expect(toolAccessOf('GET /v1/search')).toBe('member')
    expect(toolAccessOf('GET /v1/balance')).toBe('member')
  })

  test('a route no bearer admits (a founder route, the console, one that names nothing) cannot be a tool', () => {
    expect(() => toolAccessOf('GET /admin/alarms')).toThrow('founder')
    expect(() => toolAccessOf('GET /console')).toThrow('console')
    expect(() => toolAccessOf('GET /v1/nothing')).toThrow('none')
  })
})

describe('the handlers admit as their entry says (at the HTTP edge)', () => {
  const withBearer = (...kinds: string[]) => Object.keys(ROUTE_ACCESS).filter((r) => kinds.includes(ROUTE_ACCESS[r]!))
  const send = (route: string, token?: string) => {
    const [method, path] = route.split(' ') as [string, string]
    return plain.req(method, path.replace(/:\w+/g, 'x').replace(/\*$/, 'x'), { token, body: method === 'GET' || method === 'DELETE' ? undefined : {} })
  }

  test('no bearer on a member, operator or paid route → 401 UNAUTHORIZED', async () => {
    const answers: string[] = []
    for (const route of withBearer('member', 'operator', 'paid')) answers.push(`${route} ${(await send(route)).status}`)
    expect(answers.filter((a) => !a.endsWith(' 401'))).toEqual([])
  })

  test('an agent token on an operator route → 403 FORBIDDEN; on a member route never refused for its role', async () => {
    const owner = await plain.signup()
    const agent = (await plain.req('POST', '/v1/agents', { token: owner.token, body: { name: 'a' } })).body as { token: string }
    const wrong: string[] = []
    for (const route of withBearer('operator', 'operator-or-email')) {
      const r = await send(route, agent.token)
      if (r.status !== 403 || r.body.error !== 'FORBIDDEN') wrong.push(`${route} ${r.status} ${r.body?.error}`)
    }
    for (const route of withBearer('member', 'paid')) {
      const r = await send(route, agent.token)
      if (r.status === 401 || r.body?.error === 'FORBIDDEN') wrong.push(`${route} ${r.status} ${r.body?.error}`)
    }
    expect(wrong).toEqual([])
  })
})
