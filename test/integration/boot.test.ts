/**
 * Boot: configuration errors stop the process with the offending variable; a bad catalog stops it
 * with the offending path; the README's start command serves /status on the embedded defaults
 * (PGlite when DATABASE_URL is unset).
 */
import { describe, expect, test } from 'bun:test'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError, parseConfig } from '../../src/config'
import { Catalog, CatalogError } from '../../src/catalog/catalog'

const root = join(import.meta.dir, '..', '..')
const bun = process.execPath

describe('config', () => {
  test('defaults match docs/api.md §1', () => {
    const c = parseConfig({})
    expect(c).toMatchObject({
      PORT: 8080,
      BASE_URL: 'http://localhost:8080',
      REDIS_URL: 'redis://127.0.0.1:6379',
      PAYMENTS: 'sandbox',
      RATE_LIMIT_PER_TOKEN: 60,
      RATE_LIMIT_PER_IP: 10,
      DEFAULT_DAILY_CAP: 20000,
      DEFAULT_BALANCE_CAP: 100000,
      UNPRICED_DAILY_REQUEST_CAP: 1000,
      PROXY_MAX_RESPONSE_BYTES: 2097152,
      MAX_BODY_BYTES: 1048576,
      SIGNUP_ALARM_PER_HOUR: 200,
    })
    expect(c.DATABASE_URL).toBeUndefined()
  })

  test('a bad value names the variable', () => {
    expect(() => parseConfig({ PORT: 'eighty' })).toThrow(ConfigError)
    expect(() => parseConfig({ PORT: 'eighty' })).toThrow(/PORT/)
    expect(() => parseConfig({ PAYMENTS: 'paypal' })).toThrow(/PAYMENTS/)
    expect(() => parseConfig({ VAULT_MASTER_KEY: 'c2hvcnQ=' })).toThrow(/VAULT_MASTER_KEY/)
    expect(() => parseConfig({ REDIS_CLUSTER_NODES: 'nonsense' })).toThrow(/REDIS_CLUSTER_NODES/)
  })

  test('the process exits with the message on a bad value', async () => {
    const p = Bun.spawn([bun, 'run', 'src/index.ts'], { cwd: root, env: { ...process.env, RATE_LIMIT_PER_IP: '-3' }, stderr: 'pipe', stdout: 'pipe' })
    expect(await p.exited).toBe(2)
    expect(await new Response(p.stderr).text()).toContain('RATE_LIMIT_PER_IP')
  })
})

describe('catalog', () => {
  const write = (obj: unknown) => {
    const f = join(mkdtempSync(join(tmpdir(), 'cat-')), 'c.json')
    writeFileSync(f, typeof obj === 'string' ? obj : JSON.stringify(obj))
    return f
  }
  const provider = { base_url: 'http://127.0.0.1:1', auth: { header: 'x-api-key' } }

  test('the shipped catalog is valid and names real providers', () => {
    const c = Catalog.load(undefined, {})
    expect([...c.providers.keys()]).toEqual(expect.arrayContaining(['openai', 'anthropic', 'serper', 'firecrawl']))
    expect(c.capabilities.size).toBeGreaterThan(3)
    // No house keys in this environment: house-lane capabilities are honestly unavailable.
    expect(c.byState().unavailable).toContain('web.search')
  })

  test('a bad file stops the boot with the offending path', () => {
    expect(() => Catalog.load(write('{oops'), {})).toThrow(CatalogError)
    expect(() => Catalog.load(write({ providers: {}, capabilities: [{ slug: 'x' }] }), {})).toThrow(/\/capabilities\/0/)
    expect(() =>
      Catalog.load(write({ providers: { p: provider }, capabilities: [{ slug: 'a.b', provider: 'q', lane: 'house', price: 1, method: 'POST', path: '/', params: {} }] }), {}),
    ).toThrow(/\/capabilities\/0\/provider/)
    expect(() =>
      Catalog.load(write({ providers: { p: provider }, capabilities: [{ slug: 'a.b', provider: 'p', lane: 'house', price: -1, method: 'POST', path: '/', params: {} }] }), {}),
    ).toThrow(/price/)
  })

  test('PROVIDER_<ID>_BASE_URL overrides a base_url; key_env supplies the house key', () => {
    const f = write({ providers: { web: { ...provider, key_env: 'WEB_KEY' } }, capabilities: [] })
    const c = Catalog.load(f, { PROVIDER_WEB_BASE_URL: 'http://127.0.0.1:9/', WEB_KEY: 'k' })
    expect(c.providers.get('web')).toMatchObject({ base_url: 'http://127.0.0.1:9', houseKey: 'k' })
  })
})

describe('the quick-start command', () => {
  test('`bun run start` on the embedded defaults (PGlite) answers /status', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pglite-'))
    const port = 20000 + Math.floor(Math.random() * 20000)
    const env: Record<string, string> = { ...(process.env as Record<string, string>), PORT: String(port), PGLITE_DIR: dir, REDIS_KEY_PREFIX: `boot${port}`, LOG: 'silent' }
    delete env.DATABASE_URL
    const p = Bun.spawn([bun, 'run', 'start'], { cwd: root, env, stdout: 'ignore', stderr: 'pipe' })
    try {
      let status: { status?: string; postgres?: string } = {}
      // Generous: PGlite's first start (migrations) is slow when the machine is busy.
      for (let i = 0; i < 450 && status.postgres !== 'ok'; i++) {
        await Bun.sleep(100)
        status = await fetch(`http://127.0.0.1:${port}/status`).then((r) => r.json() as Promise<typeof status>, () => ({}))
      }
      expect(status).toMatchObject({ status: 'ok', postgres: 'ok' })
      const signup = await fetch(`http://127.0.0.1:${port}/v1/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: `boot-${port}@example.com` }) })
      expect(signup.status).toBe(201)
    } finally {
      p.kill('SIGTERM')
      await p.exited
    }
  }, 60000)
})
