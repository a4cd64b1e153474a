/**
 * compose.yaml is the deployment operators start from: every variable it hands the service must be a
 * setting the service reads (src/config.ts) or a provider key the catalog names, and the settings it
 * produces, with its required values filled in, must pass the service's own boot validation.
 */
import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { parse } from 'yaml'
import { ConfigSchema, parseConfig } from '../../src/config'

const ROOT = join(import.meta.dir, '..', '..')
const compose = parse(await Bun.file(join(ROOT, 'compose.yaml')).text())
const catalog = await Bun.file(join(ROOT, 'catalog.json')).json()
const providerKeys = new Set(Object.values(catalog.providers as Record<string, { key_env?: string }>).flatMap((p) => (p.key_env ? [p.key_env] : [])))

/** Compose's `${VAR:?msg}` / `${VAR:-default}` with an operator's values (a 32-byte vault key, etc.). */
function interpolate(value: string, env: Record<string, string | undefined>): string {
  return value.replace(/\$\{([A-Z_]+)(?::([?-])([^}]*))?\}/g, (_, name: string, kind?: string, rest?: string) => env[name] ?? (kind === '-' ? rest ?? '' : ''))
}

const operator = {
  BASE_URL: 'https://balance.example.com',
  POSTGRES_PASSWORD: 'pw',
  ADMIN_TOKEN: 'admin-token-0123456789',
  VAULT_MASTER_KEY: Buffer.alloc(32, 7).toString('base64'),
  STRIPE_SECRET_KEY: 'sk_test_x',
  STRIPE_WEBHOOK_SECRET: 'whsec_x',
}

describe('compose.yaml', () => {
  const api = compose.services.api
  const env = api.environment as Record<string, string>

  test('runs the service beside Redis (append-only) and PostgreSQL, each with a health check', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['api', 'postgres', 'redis'])
    expect(compose.services.redis.command).toContain('--appendonly')
    expect(compose.services.redis.command[compose.services.redis.command.indexOf('--appendonly') + 1]).toBe('yes')
    for (const name of ['api', 'redis', 'postgres']) expect(compose.services[name].healthcheck?.test?.length).toBeGreaterThan(1)
    expect(Object.keys(api.depends_on).sort()).toEqual(['postgres', 'redis'])
  })

  test('every variable it sets is a setting the service knows, or a provider key of the catalog', () => {
    const known = new Set(Object.keys(ConfigSchema.properties))
    const unknown = Object.keys(env).filter((k) => !known.has(k) && !providerKeys.has(k))
    expect(unknown).toEqual([])
  })

  test("its settings pass the service's boot validation, and do not boot the payment sandbox", () => {
    const filled = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, interpolate(String(v), operator)]))
    const cfg = parseConfig(filled)
    expect(cfg.PAYMENTS).toBe('stripe')
    expect(cfg.BASE_URL).toBe(operator.BASE_URL)
    expect(cfg.DATABASE_URL).toStartWith('postgres://')
  })

  test('a required value left unset is named, not defaulted', () => {
    for (const name of ['BASE_URL', 'ADMIN_TOKEN', 'VAULT_MASTER_KEY', 'STRIPE_SECRET_KEY']) {
      const placeholder = Object.values(env).find((v) => String(v).includes(`\${${name}:?`))
      expect(placeholder).toBeDefined()
    }
  })
})
