/**
 * NOT_CONFIGURED tells the caller "the operator has been signaled"; this is the signal. The first
 * refusal of a feature in this process logs one `not_configured` warning and holds
 * `not_configured:<feature>` in /status (cleared only by a restart with the setting in place);
 * GET /admin/alarms lists them; every refusal counts in `pab_not_configured_total{feature}`.
 * In memory per process, on purpose: the missing setting is this process's configuration, and a
 * refusal must not wait on Redis to be answered.
 * errors: NOT_CONFIGURED (built here, thrown by the feature).
 */
import { ApiError } from '../errors'
import type { Health } from '../health'
import type { Log } from '../log'

/** Every feature that can answer NOT_CONFIGURED, and the setting it lacks. */
export const UNCONFIGURED_FEATURES = {
  vault: 'VAULT_MASTER_KEY',
  admin: 'ADMIN_TOKEN',
  stripe: 'PAYMENTS=stripe with STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET',
  telegram: 'TELEGRAM_BOT_TOKEN and TELEGRAM_WEBHOOK_SECRET',
} as const

export type Feature = keyof typeof UNCONFIGURED_FEATURES

export const FEATURES = Object.keys(UNCONFIGURED_FEATURES) as Feature[]

/** The refusal a feature throws when its setting is missing; rendering it raises the alarm. */
export function notConfigured(feature: Feature): ApiError {
  return new ApiError('NOT_CONFIGURED', { feature, needs: UNCONFIGURED_FEATURES[feature] })
}

const isFeature = (f: string): f is Feature => Object.hasOwn(UNCONFIGURED_FEATURES, f)

export interface NotConfiguredAlarmView {
  kind: 'not_configured'
  feature: Feature
  needs: string
  /** First refusal in this process, ISO 8601. */
  since: string
  refusals: number
}

export class NotConfiguredAlarm {
  private raised = new Map<Feature, { since: number; refusals: number }>()

  constructor(
    private d: {
      log: Pick<Log, 'warn'>
      health: Pick<Health, 'set'>
      /** pab_not_configured_total, one child per feature. */
      count: (feature: Feature) => void
      now?: () => number
    },
  ) {}

  /** Called for every NOT_CONFIGURED answer; signals once per feature, counts every time. */
  raise(feature: string): void {
    if (!isFeature(feature)) return
    this.d.count(feature)
    const held = this.raised.get(feature)
    if (held) {
      held.refusals++
      return
    }
    this.raised.set(feature, { since: (this.d.now ?? Date.now)(), refusals: 1 })
    const needs = UNCONFIGURED_FEATURES[feature]
    this.d.log.warn('not_configured', { feature, needs })
    this.d.health.set(`not_configured:${feature}`, `requests for ${feature} are refused with NOT_CONFIGURED: set ${needs} and restart`)
  }

  list(): NotConfiguredAlarmView[] {
    return [...this.raised].map(([feature, r]) => ({
      kind: 'not_configured' as const,
      feature,
      needs: UNCONFIGURED_FEATURES[feature],
      since: new Date(r.since).toISOString(),
      refusals: r.refusals,
    }))
  }
}
