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

export const AlarmList = T.Object({
  alarms: T.Array(
    T.Object({
      kind: T.Literal('not_configured'),
      feature: T.String({ description: 'vault | admin | stripe | telegram' }),
      needs: T.String({ description: 'The setting the feature lacks' }),
      since: T.String({ description: 'First refusal on this instance, ISO 8601' }),
      refusals: T.Integer({ description: 'Refusals on this instance since it started' }),
    }),
  ),
})
