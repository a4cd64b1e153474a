/** A test app in Stripe mode, its SDK pointed at the loopback fake, plus webhook delivery. */
import { startFakeStripe, type FakeStripe, type SignedEvent } from '../fakes/stripe'
import { startTcpProxy, type TcpProxy } from '../fakes/tcp-proxy'
import { startTestApp, type TestApp, type TestResponse } from './harness'
import { consentPath, postForm, setLimits } from './money'

export interface StripeTestApp {
  t: TestApp
  stripe: FakeStripe
  /** Between the app and the fake when asked for (`faultProxy`): `down()` cuts Stripe off. */
  proxy: TcpProxy | null
  close(): Promise<void>
}

export async function startStripeApp(env: Record<string, string> = {}, opts: { faultProxy?: boolean } = {}): Promise<StripeTestApp> {
  const stripe = startFakeStripe()
  const proxy = opts.faultProxy ? await startTcpProxy('127.0.0.1', Number(new URL(stripe.url).port)) : null
  const apiBase = proxy ? `http://127.0.0.1:${proxy.port}` : stripe.url
  const t = await startTestApp({
    env: { PAYMENTS: 'stripe', STRIPE_SECRET_KEY: stripe.secretKey, STRIPE_WEBHOOK_SECRET: stripe.webhookSecret, STRIPE_API_BASE: apiBase, ...env },
  })
  return {
    t,
    stripe,
    proxy,
    async close() {
      await t.close()
      await proxy?.close()
      stripe.stop()
    },
  }
}

/** Delivers a webhook as Stripe would (raw body, Stripe-Signature header). */
export async function deliver(t: TestApp, ev: SignedEvent, signature = ev.signature): Promise<TestResponse> {
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' }
  if (signature) headers['stripe-signature'] = signature
  const res = await t.app.handle(new Request('http://pab.test/webhooks/stripe', { method: 'POST', headers, body: ev.payload }))
  const text = await res.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {}
  return { status: res.status, headers: res.headers, body, text }
}

/** The setup session the consent page sent the owner to. */
export function sessionIdOf(location: string): string {
  const id = /\/(cs_test_[A-Za-z0-9]+)$/.exec(location)?.[1]
  if (!id) throw new Error(`not a checkout url: ${location}`)
  return id
}

/** The whole consent: our page → Stripe Checkout (setup) → the human saves `card` → webhook. */
export async function consentStripe(
  a: StripeTestApp,
  token: string,
  limits: { threshold: number; refill: number; ceiling: number },
  card = '4242424242424242',
): Promise<void> {
  await setLimits(a.t, token, limits)
  const r = await postForm(a.t, await consentPath(a.t, token), {})
  if (r.status !== 303) throw new Error(`consent page: ${r.status} ${r.text.slice(0, 200)}`)
  const ev = await a.stripe.completeSetup(sessionIdOf(r.headers.get('location')!), card)
  const w = await deliver(a.t, ev)
  if (w.status !== 200) throw new Error(`webhook: ${w.status} ${w.text}`)
}
