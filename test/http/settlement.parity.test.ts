/**
 * One settlement rule for both paid paths: the same provider answer, given to a paid call
 * (`/v1/call/test.echo`, 5 credits) and to a proxied request (`/proxy/fake/...`, 3 credits), is
 * refunded or charged the same way and filed with the same outcome word in /v1/activity. Runs on a
 * real listening server so that a client's disconnect is a real one.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SETTLEMENT, type CallOutcome } from '../../src/paid-request'
import { startTestApp, type TestApp } from '../helpers/harness'
import { checkRedisInvariant, redisBalance } from '../helpers/ledger'
import { eventually } from '../helpers/proxy'

let t: TestApp
let base: string
beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_TOKEN: '100000' } })
  base = await t.listen()
})
afterAll(async () => {
  await t.close()
})

type Path = { name: string; price: number; send(token: string, signal?: AbortSignal): Promise<Response> }
const headers = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' })
const PATHS: Path[] = [
  { name: 'paid call', price: 5, send: (token, signal) => fetch(`${base}/v1/call/test.echo`, { method: 'POST', body: '{}', headers: headers(token), signal }) },
  { name: 'proxy', price: 3, send: (token, signal) => fetch(`${base}/proxy/fake/v1/chat`, { method: 'POST', body: '{}', headers: headers(token), signal }) },
]

/** What one path made of an answer: its filed outcome, whether it was refunded, what it cost. */
async function settledBy(path: Path, answer: () => Response | Promise<Response>) {
  const a = await t.signup()
  t.fake.handler = answer
  try {
    const r = await path.send(a.token)
    await r.arrayBuffer()
  } finally {
    t.fake.handler = null
  }
  return filed(a)
}

async function filed(a: { token: string; account_id: string }) {
  const act = await eventually(() => t.req('GET', '/v1/activity', { token: a.token }), (x) => x.body.calls?.length === 1)
  expect(act.body.calls).toHaveLength(1)
  await checkRedisInvariant(t, a.account_id)
  const { outcome, refunded } = act.body.calls[0] as { outcome: CallOutcome; refunded: boolean }
  return { outcome, refunded, cost: 500 - (await redisBalance(t, a.account_id)) }
}

/** The decisions themselves (docs/decisions.md), pinned here rather than read back from the table. */
const ANSWERS: [string, CallOutcome, 'charged' | 'refunded', () => Response][] = [
  ['a 200', 'ok', 'charged', () => Response.json({ ok: true })],
  ['a 302 with Location (never followed)', 'redirect', 'refunded', () => new Response(null, { status: 302, headers: { location: 'http://evil.example/steal' } })],
  ['a 304 without Location', 'ok', 'charged', () => new Response(null, { status: 304 })],
  ['a 400', 'provider_4xx', 'charged', () => Response.json({ error: 'bad' }, { status: 400 })],
  ['a 503', 'provider_error', 'refunded', () => Response.json({ error: 'down' }, { status: 503 })],
  ['a body in an unknown Content-Encoding', 'bad_encoding', 'refunded', () => new Response('zz', { headers: { 'content-encoding': 'x-unknown' } })],
]

describe('the same provider answer settles the same way on the paid call and the proxy', () => {
  for (const [what, outcome, settlement, answer] of ANSWERS) {
    test(`${what} → ${outcome}, ${settlement} on both paths`, async () => {
      expect(SETTLEMENT[outcome]).toBe(settlement)
      const refunded = settlement === 'refunded'
      for (const path of PATHS) {
        const got = await settledBy(path, answer)
        expect({ path: path.name, ...got }).toEqual({ path: path.name, outcome, refunded, cost: refunded ? 0 : path.price })
      }
    })
  }

  test('a client that goes away before the provider answers → client_closed, charged on both paths', async () => {
    for (const path of PATHS) {
      const a = await t.signup()
      const { promise: arrived, resolve } = Promise.withResolvers<void>()
      const aborted: string[] = []
      t.fake.handler = (req) => {
        req.signal.addEventListener('abort', () => aborted.push(path.name))
        resolve()
        return new Promise<Response>(() => {})
      }
      const ac = new AbortController()
      const pending = path.send(a.token, ac.signal).catch(() => 'aborted')
      await arrived
      ac.abort()
      expect(await pending).toBe('aborted')
      try {
        // The provider's request goes with the client's, on both paths.
        await eventually(async () => aborted, (x) => x.length > 0)
        expect(aborted).toEqual([path.name])
        expect({ path: path.name, ...(await filed(a)) }).toEqual({ path: path.name, outcome: 'client_closed', refunded: false, cost: path.price })
      } finally {
        t.fake.handler = null
      }
    }
  })
})
