import { Type as T } from '@sinclair/typebox'
import { Credits } from '../../governance/model'

export const SlugParams = T.Object({ slug: T.String({ maxLength: 100 }) })
export const CapabilityState = T.Object({
  slug: T.String(),
  status: T.Union([T.Literal('live'), T.Literal('paused'), T.Literal('unavailable')]),
})

export const SignupsState = T.Object({ signups: T.Union([T.Literal('open'), T.Literal('paused')]) })

export const AccountParams = T.Object({ id: T.String({ maxLength: 100 }) })
export const BalanceCapBody = T.Object({ balance_cap: Credits }, { additionalProperties: false })
export const BalanceCapResponse = T.Object({ account_id: T.String(), balance_cap: T.Integer(), balance: T.Integer() })

const BillTokens = T.Object({ input: T.Integer(), cached: T.Integer(), output: T.Integer() })

export const AlarmList = T.Object({
  alarms: T.Array(
    T.Union([
      T.Object({
        kind: T.Literal('not_configured'),
        feature: T.String({ description: 'vault | admin | stripe | telegram' }),
        needs: T.String({ description: 'The setting the feature lacks' }),
        since: T.String({ description: 'First refusal on this instance, ISO 8601' }),
        refusals: T.Integer({ description: 'Refusals on this instance since it started' }),
      }),
      T.Object({
        kind: T.Literal('reconcile_drift'),
        reason: T.String({ description: 'reconcile_drift:<provider>, as /status names it' }),
        provider: T.String(),
        day: T.String({ description: 'The newest UTC day with drift' }),
        since: T.String({ description: 'When that day was checked, ISO 8601' }),
        threshold_pct: T.Number({ description: 'RECONCILE_DRIFT_PCT' }),
        models: T.Array(
          T.Object({ day: T.String(), model: T.String(), ours: BillTokens, theirs: BillTokens, drift_pct: T.Number() }),
          { description: 'Every drifting model of the last 7 reconciled days, newest first: our metered tokens and the provider\'s (docs/api.md §13d)' },
        ),
      }),
    ]),
  ),
})
