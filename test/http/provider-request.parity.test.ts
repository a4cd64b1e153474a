/**
 * Both paid paths send through one provider request (src/upstream/request.ts), so an answer is
 * judged in one order on both: its status first (a 5xx is the provider's error whatever its body),
 * then its content-coding, then its declared length against the response cap. Before, the paid
 * call looked at the body first and filed a 5xx in an unknown coding as bad_encoding, and a 5xx
 * past the cap as too_large (RESPONSE_TOO_LARGE), where the proxy said provider_error.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { CallOutcome } from '../../src/paid-request'
import { startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, redisBalance } from '../helpers/ledger'
import { eventually } from '../helpers/proxy'

const CAP = 1000
let t: TestApp
let base: string
beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_TOKEN: '100000', PROXY_MAX_RESPONSE_BYTES: String(CAP) } })
  base = await t.listen()
})
afterAll(async () => {
  await t.close()
})

const headers = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' })
const PATHS = [
  { name: 'paid call', send: (token: string) => fetch(`${base}/v1/call/test.echo`, { method: 'POST', body: '{}', headers: headers(token) }) },
  { name: 'proxy', send: (token: string) => fetch(`${base}/proxy/fake/v1/chat`, { method: 'POST', body: '{}', headers: headers(token) }) },
]

async function answeredBy(path: (typeof PATHS)[number], answer: () => Response) {
  const a = await t.signup()
  t.fake.handler = answer
  let body: { error?: string; provider_status?: number }
  let status: number
  try {
    const r = await path.send(a.token)
    status = r.status
    body = (await r.json()) as typeof body
  } finally {
    t.fake.handler = null
  }
  const act = await eventually(() => t.req('GET', '/v1/activity', { token: a.token }), (x) => x.body.calls?.length === 1)
  await checkRedisInvariant(t, a.account_id)
  const { outcome, refunded } = act.body.calls[0] as { outcome: CallOutcome; refunded: boolean }
  return { path: path.name, status, error: body.error, provider_status: body.provider_status, outcome, refunded, balance: await redisBalance(t, a.account_id) }
}

const ANSWERS: [string, () => Response][] = [
  ['a 503 in a Content-Encoding we cannot undo', () => new Response('zz', { status: 503, headers: { 'content-encoding': 'x-unknown' } })],
  ['a 503 declaring a body past the response cap', () => new Response('x'.repeat(CAP * 4), { status: 503 })],
]

describe('one provider request: a 5xx is the provider error on both paths, whatever its body', () => {
  for (const [what, answer] of ANSWERS)
    test(`${what} → PROVIDER_ERROR, provider_error, refunded on both paths`, async () => {
      for (const path of PATHS)
        expect(await answeredBy(path, answer)).toEqual({ path: path.name, status: 502, error: 'PROVIDER_ERROR', provider_status: 503, outcome: 'provider_error', refunded: true, balance: 500 })
    })
})
