/**
 * The service process on the quick start's defaults (no BASE_URL, so a loopback
 * one; PAYMENTS=sandbox; the demo provider on) listens on loopback only: 127.0.0.1 and ::1 answer,
 * this machine's other addresses refuse the connection. LISTEN_HOST opens it on purpose, and the
 * sandbox then needs its own opt-in to boot at all.
 *
 *   bun test test/http/listen.loopback.security.test.ts
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { networkInterfaces } from 'node:os'
import { join } from 'node:path'
import { parseConfig } from '../../src/config'
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream'
import { apiProcess, type ApiProcess } from '../helpers/api-process'
import { cleanupAll } from '../helpers/cleanup'
import { createTestDatabase } from '../helpers/harness'

/** An address of this machine that other machines reach (none on a host with loopback only). */
const external = Object.values(networkInterfaces())
  .flat()
  .find((i) => i && !i.internal && i.family === 'IPv4')?.address
const hasIpv6Loopback = Object.values(networkInterfaces())
  .flat()
  .some((i) => i?.address === '::1')

function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ host, port })
    const done = (ok: boolean) => {
      sock.destroy()
      resolve(ok)
    }
    sock.setTimeout(2000, () => done(false))
    sock.once('connect', () => done(true))
    sock.once('error', () => done(false))
  })
}

async function startLine(a: ApiProcess): Promise<{ addresses: string[]; base_url: string }> {
  const line = (await a.log()).split('\n').find((l) => l.includes('"msg":"listening"'))
  return JSON.parse(line!)
}

let fake: FakeUpstream
let db: Awaited<ReturnType<typeof createTestDatabase>>
let api: ApiProcess | null = null
beforeAll(async () => {
  fake = startFakeUpstream()
  db = await createTestDatabase()
})
afterEach(() => api?.dispose())
afterAll(() => cleanupAll(() => fake?.stop(), () => db?.drop()))

/** The quick start's settings: the helper's test BASE_URL and sandbox opt-in taken away again. */
const quickStart = { BASE_URL: '', PAYMENTS_SANDBOX_PUBLIC: '', DEMO_PROVIDER: 'auto' }

describe.skipIf(!external)('the bound addresses of a spawned service', () => {
  test('defaults (loopback BASE_URL, sandbox, demo): 127.0.0.1 and ::1 answer, the machine’s own address does not', async () => {
    api = await apiProcess({ databaseUrl: db.url, prefix: `lb${Date.now()}`, fakeUrl: fake.url, env: quickStart })
    await api.start()
    const port = Number(new URL(api.url).port)
    const line = await startLine(api)
    expect(line.base_url).toBe(`http://localhost:${port}`)
    expect(await accepts('127.0.0.1', port)).toBe(true)
    if (hasIpv6Loopback) expect(await accepts('::1', port)).toBe(true)
    expect(await accepts(external!, port)).toBe(false)
    expect(line.addresses).toEqual(hasIpv6Loopback ? [`127.0.0.1:${port}`, `[::1]:${port}`] : [`127.0.0.1:${port}`])
    // The quick start still works where the README says: the demo provider answers a paid call.
    const s = await fetch(`${api.url}/v1/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: `lb-${port}@example.com` }) })
    const { token } = (await s.json()) as { token: string }
    const call = await fetch(`${api.url}/v1/call/demo.echo`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{"hi":1}' })
    expect(call.status).toBe(200)
  }, 60_000)

  test('LISTEN_HOST=0.0.0.0 with the sandbox opted public: the machine’s own address answers too', async () => {
    api = await apiProcess({ databaseUrl: db.url, prefix: `lb${Date.now()}`, fakeUrl: fake.url, env: { ...quickStart, LISTEN_HOST: '0.0.0.0', PAYMENTS_SANDBOX_PUBLIC: '1' } })
    await api.start()
    const port = Number(new URL(api.url).port)
    expect(await accepts(external!, port)).toBe(true)
    expect((await startLine(api)).addresses).toEqual([`0.0.0.0:${port}`])
  }, 60_000)
})

describe('LISTEN_HOST in the configuration', () => {
  test('the sandbox on a non-loopback listener refuses to boot, naming LISTEN_HOST and the opt-in', () => {
    for (const host of ['0.0.0.0', '::', '192.0.2.2'])
      expect(() => parseConfig({ LISTEN_HOST: host })).toThrow(/LISTEN_HOST=.*PAYMENTS_SANDBOX_PUBLIC=1/s)
    expect(parseConfig({ LISTEN_HOST: '0.0.0.0', PAYMENTS_SANDBOX_PUBLIC: '1' }).LISTEN_HOST).toBe('0.0.0.0')
    expect(parseConfig({ LISTEN_HOST: '127.0.0.1' }).PAYMENTS).toBe('sandbox')
    expect(parseConfig({ LISTEN_HOST: '::1' }).PAYMENTS).toBe('sandbox')
  })

  test('a value that is not an IP address is refused by name', () => {
    for (const bad of ['localhost', 'example.com', '0.0.0.0:8080', '300.1.1.1'])
      expect(() => parseConfig({ LISTEN_HOST: bad, PAYMENTS_SANDBOX_PUBLIC: '1' })).toThrow(/LISTEN_HOST/)
  })
})
