/** Picks the gateway of `PAYMENTS` (config.ts already refused stripe mode without its secrets). */
import type { Config } from '../config'
import type { PaymentGateway } from './gateway'
import { SandboxGateway } from './sandbox'
import { StripeGateway } from './stripe'

export function createGateway(cfg: Config): PaymentGateway {
  if (cfg.PAYMENTS === 'stripe')
    return new StripeGateway({
      secretKey: cfg.STRIPE_SECRET_KEY!,
      webhookSecret: cfg.STRIPE_WEBHOOK_SECRET!,
      apiBase: cfg.STRIPE_API_BASE,
      baseUrl: cfg.BASE_URL,
    })
  return new SandboxGateway()
}
