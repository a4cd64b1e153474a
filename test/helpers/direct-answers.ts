/**
 * For the tests that hold a direct path (served without Elysia's router: the proxy's, the paid
 * call's) to the routed one: an answer as the two are compared — status, headers and body, less
 * what differs from one call to the next (the call id, the balance after it, the request id, the
 * date); and the set-up and the counter and failure checks both files make.
 */
import { afterAll, beforeAll, expect } from 'bun:test'
import { createApp, type App } from '../../src/app'
import { startTestApp, type TestApp } from './harness'

const VOLATILE_HEADERS = new Set(['date', 'x-request-id', 'x-pab-call-id', 'x-pab-balance'])
const VOLATILE_FIELDS = new Set(['call_id', 'balance', 'request_id'])

export interface Answer {
  status: number
  headers: Record<string, string>
  body: unknown
}

/** `res` as compared: its volatile headers and JSON fields read '…'; a body that is no JSON, as text. */
export async function comparable(res: Response): Promise<Answer> {
  const headers: Record<string, string> = {}
  res.headers.forEach((v, k) => (headers[k] = VOLATILE_HEADERS.has(k) ? '…' : v))
  const text = await res.text()
  let body: unknown = text
  try {
    body = JSON.parse(text, (k, v) => (VOLATILE_FIELDS.has(k) ? '…' : v))
  } catch {
    // not JSON: compared as text
  }
  return { status: res.status, headers, body }
}

/** The answer `app` gives the request `make` builds, as compared. */
export async function answerOf(app: App, make: () => Request): Promise<Answer> {
  return comparable(await app.handle(make()))
}

export interface DirectRig {
  t: TestApp
  /** The same services built with the path under test routed. */
  routed: App
  token: string
  accountId: string
}

/**
 * The file's two apps and one signed-up account: registers their start before the file's tests
 * (bodies up to 1,000 bytes, so that the limit is reachable) and their close after; filled in then.
 */
export function directRig(routedAs: Parameters<typeof createApp>[1]): DirectRig {
  const rig = {} as DirectRig
  beforeAll(async () => {
    rig.t = await startTestApp({ env: { MAX_BODY_BYTES: '1000' } })
    rig.routed = createApp(rig.t.s, routedAs)
    const a = await rig.t.signup()
    rig.token = a.token
    rig.accountId = a.account_id
  })
  afterAll(async () => {
    rig.t.fake.handler = null
    await rig.t.close()
  })
  return rig
}

/** What `metric` of `t`'s registry counted over the series whose labels include `labels`. */
async function counted(t: TestApp, metric: string, labels: Record<string, string>): Promise<number> {
  const m = (await t.s.metrics.registry.getSingleMetric(metric)!.get()).values
  return m.filter((v) => Object.entries(labels).every(([k, x]) => String(v.labels[k]) === x)).reduce((n, v) => n + v.value, 0)
}

/** `request` (no token) through the direct path: one more 401 counted under `route`, one more UNAUTHORIZED, as routed. */
export async function expectRefusalCounted(t: TestApp, route: string, request: Request): Promise<void> {
  const requests = { route, method: 'POST', status: '401' }
  const errors = { code: 'UNAUTHORIZED' }
  const before = { requests: await counted(t, 'pab_http_requests_total', requests), errors: await counted(t, 'pab_api_errors_total', errors) }
  await t.app.handle(request)
  expect(await counted(t, 'pab_http_requests_total', requests)).toBe(before.requests + 1)
  expect(await counted(t, 'pab_api_errors_total', errors)).toBe(before.errors + 1)
}

/** `fn` run while `t`'s token lookup throws (an error nobody planned for), the lookup restored after. */
export async function whileTokenLookupThrows<R>(t: TestApp, fn: () => Promise<R>): Promise<R> {
  const tokens = t.s.guard.tokens
  const resolve = tokens.resolve
  tokens.resolve = async () => {
    throw new Error('boom')
  }
  try {
    return await fn()
  } finally {
    tokens.resolve = resolve
  }
}
