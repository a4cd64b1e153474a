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
