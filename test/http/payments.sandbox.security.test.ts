/**
 * Sandbox payments credit any balance for the public test card, and an agent that reads enable_url
 * or topup_url can complete those pages itself: a deployment reachable from elsewhere must not run
 * them by accident. The real process refuses to boot, naming the opt-in; /status says which mode runs.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { startTestApp, type TestApp } from '../helpers/harness'
import { startStripeApp, type StripeTestApp } from '../helpers/stripe-app'

const root = join(import.meta.dir, '..', '..')

async function boot(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const port = 20000 + Math.floor(Math.random() * 20000)
  const p = Bun.spawn([process.execPath, 'run', 'src/index.ts'], {
    cwd: root,
    env: { ...process.env, PORT: String(port), LOG: 'silent', REDIS_KEY_PREFIX: `sbx${port}`, PAYMENTS: 'sandbox', ...env },
    stdout: 'ignore',
    stderr: 'pipe',
  })
  // A refused boot exits at once; one that boots is stopped after a few seconds.
  const timer = setTimeout(() => p.kill('SIGTERM'), 5000)
  const code = await p.exited
  clearTimeout(timer)
  return { code, stderr: await new Response(p.stderr).text() }
}

describe('sandbox payments on a public BASE_URL', () => {
  test('the process refuses to boot and names the opt-in variable', async () => {
    const r = await boot({ BASE_URL: 'https://pab.example.com' })
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('PAYMENTS_SANDBOX_PUBLIC')
    expect(r.stderr).toContain('PAYMENTS=sandbox')
  }, 20000)
})

describe('/status names the payment mode', () => {
  let sandbox: TestApp
  let stripe: StripeTestApp
  beforeAll(async () => {
    sandbox = await startTestApp()
    stripe = await startStripeApp()
  })
  afterAll(async () => {
    await sandbox.close()
    await stripe.close()
  })

  test('sandbox and stripe', async () => {
    expect((await sandbox.req('GET', '/status')).body).toMatchObject({ payments: 'sandbox' })
    expect((await stripe.t.req('GET', '/status')).body).toMatchObject({ payments: 'stripe' })
  })
})
