/**
 * Webhook endpoints cannot point the service at its own network: every special-purpose address
 * (IANA's IPv4 and IPv6 registries), however the host is written, is refused when the URL is set;
 * a name is resolved again when a delivery is sent, and a name that resolves to such an address
 * gets no request. What the owner sees of a failed delivery is a category, never the raw
 * connection error (which would make the deliveries list a port scanner). One owner's endpoint
 * that never answers cannot hold another owner's deliveries: sends run on their own, a few at a
 * time per endpoint, and the look-up of a name has the attempt's deadline too.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { lookup } from 'node:dns/promises'
import { createServer } from 'node:net'
import { hostname } from 'node:os'
import { webhookEndpoints } from '../../src/db/schema'
import { beforeDeadline } from '../../src/events/webhook-send'
import { startReceiver, type Receiver } from '../fakes/webhook-receiver'
import { deliverAll, subscribe } from '../helpers/events'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'

let t: TestApp
let hooks: Receiver
/** An endpoint that accepts the connection and never answers. */
let hang: ReturnType<typeof Bun.serve>
let hangHits = 0
beforeAll(async () => {
  hooks = startReceiver()
  hang = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: () => {
      hangHits++
      return new Promise<Response>(() => {})
    },
  })
  // The loopback opt-in stays on, as in the other webhook tests: it must not open anything else.
  t = await startTestApp({ env: { WEBHOOKS_ALLOW_INSECURE_LOOPBACK: '1' } })
})
afterAll(async () => {
  hang.stop(true)
  await t.close()
  hooks.stop()
})

const put = (token: string, url: string) => t.req('PUT', '/v1/webhooks', { token, body: { url } })
const deliveries = async (token: string) => (await t.req('GET', '/v1/webhooks/deliveries', { token })).body.deliveries as Record<string, any>[]

/** One event for the owner (an agent created and killed), flushed and attempted once. */
async function oneAttempt(owner: { token: string }) {
  const agent = (await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'a' } })).body
  await t.req('POST', `/v1/agents/${agent.id}/kill`, { token: owner.token })
  await deliverAll(t)
  return deliveries(owner.token)
}

describe('webhook URLs: special-purpose hosts are refused however they are written', () => {
  test('every special-purpose range, trailing dots, numeric IPv4 forms, mapped and embedded IPv4 → BAD_REQUEST', async () => {
    const owner = await t.signup()
    const refused = [
      // names
      'https://localhost./h',
      'https://LOCALHOST/h',
      'https://api.localhost/h',
      'https://metadata.google.internal./x',
      'https://printer.local/h',
      'https://router.home.arpa/h',
      // IPv4 special-purpose registry
      'https://0.0.0.0/h',
      'https://10.0.0.1/h',
      'https://100.64.0.1/h',
      'https://127.0.0.2/h',
      'https://169.254.169.254/latest',
      'https://172.16.0.1/h',
      'https://172.31.255.255/h',
      'https://192.0.0.8/h',
      'https://192.0.2.1/h',
      'https://192.88.99.1/h',
      'https://192.168.1.1/h',
      'https://198.18.0.1/h',
      'https://198.19.255.254/h',
      'https://198.51.100.7/h',
      'https://203.0.113.9/h',
      'https://224.0.0.1/h',
      'https://239.255.255.250/h',
      'https://240.0.0.1/h',
      'https://255.255.255.255/h',
      // IPv4 written otherwise
      'https://2130706433/h',
      'https://0x7f.1/h',
      'https://0177.0.0.1/h',
      'https://127.1/h',
      'https://127.0.0.1./h',
      'https://0x0a000001/h',
      // IPv6 special-purpose registry
      'https://[::]/h',
      'https://[::1]/h',
      'https://[::ffff:127.0.0.1]/h',
      'https://[::ffff:10.0.0.1]/h',
      'https://[::127.0.0.1]/h',
      'https://[64:ff9b::7f00:1]/h',
      'https://[64:ff9b::808:808]/h',
      'https://[64:ff9b:1::1]/h',
      'https://[100::1]/h',
      'https://[2001::1]/h',
      'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/h',
      'https://[2001:db8::1]/h',
      'https://[2002:7f00:1::1]/h',
      'https://[fc00::1]/h',
      'https://[fd12:3456::1]/h',
      'https://[fe80::1]/h',
      'https://[ff02::1]/h',
      'https://[fe80::1%25eth0]/h',
    ]
    const accepted: string[] = []
    for (const url of refused) {
      const r = await put(owner.token, url)
      if (r.status !== 400 || r.body.field !== 'url') accepted.push(url)
    }
    expect(accepted).toEqual([])
    // Public hosts and addresses are still fine, and the loopback opt-in still works.
    for (const url of ['https://hooks.example.com/h', 'https://8.8.8.8/h', 'https://[2606:4700:4700::1111]/h', 'https://[::ffff:8.8.8.8]/h', hooks.url])
      expect([url, (await put(owner.token, url)).status]).toEqual([url, 200])
  })
})

describe('webhook deliveries', () => {
  test('a name that resolves to a special-purpose address at delivery time gets no request: "refused address"', async () => {
    // This machine's own name resolves (through /etc/hosts) to one of its own addresses.
    const name = hostname().toLowerCase()
    const answers = await lookup(name, { all: true })
    expect(answers.length).toBeGreaterThan(0)
    const owner = await t.signup()
    const put1 = await put(owner.token, `https://${name}:${new URL(hooks.url).port}/hook`)
    expect(put1.status).toBe(200)
    const before = hooks.requests.length
    const [d] = await oneAttempt(owner)
    expect(d).toMatchObject({ status: 'pending', attempts: 1, last_response_code: null, last_error: 'refused address' })
    expect(hooks.requests.length).toBe(before)
  })

  test('an endpoint stored before the checks tightened is refused when sent, not delivered', async () => {
    const owner = await t.signup()
    await subscribe(t, owner.token, hooks)
    // Written straight to the table: the API no longer accepts this URL.
    await t.s.db.db
      .update(webhookEndpoints)
      .set({ url: `https://localhost.:${new URL(hooks.url).port}/h` })
      .where(eq(webhookEndpoints.accountId, owner.account_id))
    const before = hooks.requests.length
    const [d] = await oneAttempt(owner)
    expect(d).toMatchObject({ last_response_code: null, last_error: 'refused address' })
    expect(hooks.requests.length).toBe(before)
  })

  test('a closed port shows "connection failed", never the connection error itself', async () => {
    const owner = await t.signup()
    const port = await freePort()
    expect((await put(owner.token, `http://127.0.0.1:${port}/hook`)).status).toBe(200)
    const [d] = await oneAttempt(owner)
    expect(d).toMatchObject({ status: 'pending', last_response_code: null, last_error: 'connection failed' })
  })

  test('an error status is shown as its category; a 2xx is delivered', async () => {
    const owner = await t.signup()
    await subscribe(t, owner.token, hooks)
    hooks.down = true
    const [d] = await oneAttempt(owner)
    hooks.down = false
    expect(d).toMatchObject({ last_response_code: 503, last_error: 'HTTP 503' })
    t.clock.advance(60_000)
    await deliverAll(t)
    expect((await deliveries(owner.token))[0]).toMatchObject({ status: 'delivered', last_response_code: 204, last_error: null })
  })

  test("an endpoint that never answers does not hold another owner's delivery", async () => {
    // 51 events due for the hanging endpoint — more than a claim takes — then one for another owner.
    const slow = await t.signup()
    await subscribe(t, slow.token, { url: `http://127.0.0.1:${hang.port}/hooks`, secret: null })
    const agent = (await t.req('POST', '/v1/agents', { token: slow.token, body: { name: 'noisy' } })).body
    for (let i = 0; i < 25; i++) {
      await t.req('POST', `/v1/agents/${agent.id}/kill`, { token: slow.token })
      await t.req('POST', `/v1/agents/${agent.id}/revive`, { token: slow.token })
    }
    t.clock.advance(1000)
    const other = await t.signup()
    await subscribe(t, other.token, hooks)
    const before = hooks.unique().length
    await t.req('POST', '/v1/agents', { token: other.token, body: { name: 'quiet' } })
    await flushAll(t)

    const start = Date.now()
    let waited = -1
    const worker = (async () => {
      for (let i = 0; i < 5 && waited < 0; i++) await t.s.deliveries.runOnce()
    })()
    while (Date.now() - start < 30_000) {
      if (hooks.unique().length > before) {
        waited = Date.now() - start
        break
      }
      await Bun.sleep(20)
    }
    await worker
    expect(waited).toBeGreaterThanOrEqual(0)
    expect(waited).toBeLessThan(3000) // it waited for the hanging sends' 10 s timeout before
    // A few sends at a time to one endpoint, not the whole claim.
    expect(hangHits).toBeGreaterThan(0)
    expect(hangHits).toBeLessThanOrEqual(4)

    // The hanging sends end (the endpoint goes away): failed attempts, retried later as before.
    hang.stop(true)
    await t.s.deliveries.idle()
    const slowOnes = (await t.req('GET', '/v1/webhooks/deliveries?limit=100', { token: slow.token })).body.deliveries as Record<string, any>[]
    expect(slowOnes).toHaveLength(51)
    expect(slowOnes.filter((d) => d.attempts === 1).length).toBe(hangHits)
    expect(slowOnes.every((d) => d.status === 'pending')).toBe(true)
    // The rows claimed past the endpoint's bound were given back due, not left leased for a minute:
    // the next round sends as many as the first one did.
    expect(await t.s.deliveries.runOnce()).toBe(hangHits)
    await t.s.deliveries.idle()
  })

  test('a name that never resolves ends at the attempt deadline', async () => {
    const started = Date.now()
    const never = new Promise<never>(() => {})
    await expect(beforeDeadline(never, AbortSignal.timeout(100))).rejects.toBeDefined()
    expect(Date.now() - started).toBeLessThan(2000)
  })
})

/** A loopback port nobody listens on. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer()
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => resolve(port))
    })
  })
}
