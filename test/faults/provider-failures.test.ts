/**
 * Fault: providers that hang, reset mid-stream, refuse the connection or answer 5xx, mixed into
 * load on the API process (real sockets, real timeouts). Every debit of a failed call is refunded
 * exactly once, whether the failure came before the answer (PROVIDER_ERROR, refunded: true) or
 * after the proxy had already started streaming (the client sees a cut body; the refund happens
 * all the same). Successful calls keep their one debit.
 *
 *   bun test test/faults/provider-failures.test.ts
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createServer, type Server } from 'node:net'
import { driveLoad, signupOver, waitDrained } from '../helpers/api-process'
import { startFaultRig, type FaultRig } from '../helpers/fault-rig'
import { testCatalog } from '../helpers/harness'
import { assertLedger } from '../helpers/invariants'

let resetter: Server
let resetUrl = ''

/**
 * A provider that answers 200 with a chunked body, sends a first chunk, then resets the TCP
 * connection: the break comes from the socket, mid-stream, as a crashed provider's would.
 */
function startResetter(): Promise<Server> {
  const server = createServer((socket) => {
    socket.once('data', () => {
      socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\nb\r\n{"partial":\r\n')
      setTimeout(() => socket.resetAndDestroy(), 5)
    })
    socket.on('error', () => {})
  })
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)))
}

/** The test catalog plus a resetting capability and proxy routes onto failures (reset, dead port, 5xx). */
function catalog(fakeUrl: string) {
  const c = testCatalog(fakeUrl)
  const auth = { key_env: 'FAKE_HOUSE_KEY', auth: { header: 'authorization', scheme: 'Bearer' } }
  const p = (base_url: string) => ({ base_url, ...auth, proxy: { price: 2, paths: ['/'], house: { allow: ['/'] } } })
  const resetCap = { ...c.capabilities.find((x) => x.slug === 'test.echo')!, slug: 'fault.reset', provider: 'resetter', path: '/any' }
  return {
    providers: { ...c.providers, anypath: p(fakeUrl), deadproxy: p('http://127.0.0.1:1'), resetter: p(resetUrl) },
    capabilities: [...c.capabilities, resetCap],
  }
}

let rig: FaultRig
beforeAll(async () => {
  resetter = await startResetter()
  resetUrl = `http://127.0.0.1:${(resetter.address() as { port: number }).port}`
  rig = await startFaultRig({ catalog, also: () => resetter?.close() })
})
afterAll(() => rig?.close())

const PATHS = [
  '/v1/call/test.echo',
  '/v1/call/test.hang', // times out after 300 ms
  '/v1/call/fault.reset', // 200, a first chunk, then a TCP reset
  '/v1/call/test.fail', // 500
  '/v1/call/test.unavailable503',
  '/v1/call/test.refused', // nothing listens
  '/proxy/anypath/status/500',
  '/proxy/anypath/status/503',
  '/proxy/resetter/any', // the proxy has started streaming when the connection resets
  '/proxy/deadproxy/v1/x',
  '/proxy/anypath/ok',
]

test('hang, reset, refused and 5xx under load: every failed call refunded exactly once, no other failure', async () => {
  const { api, prefix } = rig
  const accounts = await signupOver(api.url, 20, prefix)
  const load = driveLoad(api.url, accounts.map((a) => a.token), { workers: 24, path: (i) => PATHS[i % PATHS.length]! })
  await Bun.sleep(2_500)
  const tally = await load.stop()

  expect(tally.errors).toHaveLength(0)
  expect(tally.failedAt).toHaveLength(0)
  expect([...tally.other].filter(([status]) => status !== 402)).toEqual([])
  expect(tally.ok.length).toBeGreaterThan(20)
  expect(tally.refunded.length).toBeGreaterThan(100)
  expect(tally.cut.length).toBeGreaterThan(0)

  await waitDrained(api.url)
  await api.stop()
  await assertLedger(await rig.ledger(), accounts.map((a) => ({ account: a.account_id })), { debits: tally.ok, refunded: [...tally.refunded, ...tally.cut] })
}, 60_000)
