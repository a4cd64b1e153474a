/**
 * The image never boots into the sandbox on a published port. No Docker engine runs here, so the
 * test reads the Dockerfile's runtime stage (its ENV and CMD) and runs the configuration loader
 * with exactly that environment: as shipped it does not start at all (PAYMENTS=stripe needs its
 * secrets), with the Stripe secrets it runs Stripe on 0.0.0.0, and an operator who switches it to
 * the sandbox is refused unless they opt the sandbox public by name. CMD is the exec form, so
 * `docker stop`'s SIGTERM reaches the service itself (PID 1), which drains and exits.
 */
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, listenHosts, listensOnLoopbackOnly, parseConfig } from '../../src/config'
import { demoEnabled } from '../../src/catalog/demo'

const ROOT = join(import.meta.dir, '..', '..')

interface Stage {
  env: Record<string, string>
  cmd: string[] | string
}

/** The last stage's ENV (`ENV K=V K2="V 2"` and the legacy `ENV K V`) and CMD, continuations joined. */
function runtimeStage(dockerfile: string): Stage {
  const lines = dockerfile
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
  const last = lines.map((l, i) => (/^FROM\s/i.test(l) ? i : -1)).filter((i) => i >= 0).pop() ?? 0
  const stage: Stage = { env: {}, cmd: [] }
  for (const line of lines.slice(last)) {
    const [, instr = '', rest = ''] = /^(\w+)\s+(.*)$/.exec(line) ?? []
    if (instr.toUpperCase() === 'ENV') {
      if (!rest.includes('=')) {
        const [k, ...v] = rest.split(/\s+/)
        stage.env[k!] = v.join(' ')
        continue
      }
      for (const m of rest.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)/g)) stage.env[m[1]!] = m[2]!.startsWith('"') ? JSON.parse(m[2]!) : m[2]!
    }
    if (instr.toUpperCase() === 'CMD') stage.cmd = rest.startsWith('[') ? (JSON.parse(rest) as string[]) : rest
  }
  return stage
}

const image = runtimeStage(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))
const STRIPE = { STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_WEBHOOK_SECRET: 'whsec_x' }

describe('the Dockerfile', () => {
  test('the parser reads what it should (a stage with ENV forms and a shell CMD)', () => {
    const s = runtimeStage('FROM a AS b\nENV X=1\nFROM c\nENV A=1 B="two words" \\\n  C=3\nENV D 4 5\nCMD bun run x.ts\n')
    expect(s).toEqual({ env: { A: '1', B: 'two words', C: '3', D: '4 5' }, cmd: 'bun run x.ts' })
  })

  test('as shipped, the service does not start: PAYMENTS=stripe needs its secrets', () => {
    expect(image.env.PAYMENTS).toBe('stripe')
    expect(() => parseConfig(image.env)).toThrow(ConfigError)
    expect(() => parseConfig(image.env)).toThrow(/PAYMENTS=stripe needs STRIPE_SECRET_KEY/)
  })

  test('with the Stripe secrets it runs Stripe on every interface of the container, without the demo provider', () => {
    const cfg = parseConfig({ ...image.env, ...STRIPE })
    expect(cfg.PAYMENTS).toBe('stripe')
    expect(listenHosts(cfg)).toEqual(['0.0.0.0'])
    expect(listensOnLoopbackOnly(cfg)).toBe(false)
    expect(demoEnabled(cfg)).toBe(false)
  })

  test('never the sandbox on a public interface: switching the image to the sandbox is refused without the explicit opt-in', () => {
    for (const env of [{ PAYMENTS: 'sandbox' }, { PAYMENTS: 'sandbox', BASE_URL: 'http://localhost:8080' }, { PAYMENTS: '' }]) {
      let cfg: ReturnType<typeof parseConfig> | null = null
      try {
        cfg = parseConfig({ ...image.env, ...env })
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError)
      }
      if (cfg) expect(cfg.PAYMENTS === 'sandbox' && !listensOnLoopbackOnly(cfg)).toBe(false)
    }
    expect(() => parseConfig({ ...image.env, PAYMENTS: 'sandbox' })).toThrow(/PAYMENTS_SANDBOX_PUBLIC=1/)
  })

  test('CMD runs the service itself in exec form (it is PID 1 and gets the SIGTERM of docker stop)', () => {
    expect(image.cmd).toEqual(['bun', 'run', 'src/index.ts'])
  })
})
