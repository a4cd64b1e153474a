/**
 * The built-in demo provider: two capabilities this service answers itself under /demo/, so a
 * quick start without provider keys or internet still shows a debit, a refund and a 402.
 * On for a loopback BASE_URL served on loopback only (DEMO_PROVIDER=auto); a deployment reachable
 * from elsewhere must opt in with `on`, since a demo capability there would sell nothing real.
 */
import { isLoopback, listensOnLoopbackOnly, type Config } from '../config'

/** Priced so that the 500 signup credits run out in 20 calls, well inside the default 60 calls a minute. */
export const DEMO_ECHO_PRICE = 25

export function demoEnabled(cfg: Pick<Config, 'DEMO_PROVIDER' | 'BASE_URL' | 'LISTEN_HOST'>): boolean {
  if (cfg.DEMO_PROVIDER !== 'auto') return cfg.DEMO_PROVIDER === 'on'
  return isLoopback(cfg.BASE_URL) && listensOnLoopbackOnly(cfg)
}

/** Catalog entries (docs/api.md §4 format) whose provider is this service at BASE_URL. */
export function demoCatalog(baseUrl: string) {
  const anything = { type: 'object', additionalProperties: true }
  const cap = (slug: string, path: string, price: number, description: string) => ({
    slug,
    provider: 'demo',
    lane: 'house',
    price,
    method: 'POST',
    path,
    timeout_ms: 5000,
    description,
    params: anything,
  })
  return {
    providers: { demo: { base_url: `${baseUrl}/demo`, auth: { header: 'x-demo-key' } } },
    capabilities: [
      cap('demo.echo', '/echo', DEMO_ECHO_PRICE, 'DEMO — answers 200 with the params echoed back; served by this service itself, charged like a real call'),
      cap('demo.flaky', '/flaky', 5, 'DEMO — always fails with a provider 503, so the call is refunded (PROVIDER_ERROR); served by this service itself'),
    ],
  }
}
