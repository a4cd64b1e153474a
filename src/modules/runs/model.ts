import { Type as T } from '@sinclair/typebox'

export const Run = T.Object({
  id: T.String(),
  agent_id: T.String({ description: 'The agent that opened the run' }),
  max: T.Integer({ description: 'Credits the calls carrying the run may spend together (fixed at opening)' }),
  spent: T.Integer({ description: 'What they spent: debits less refunds and metered releases (a metered call in flight counts its reservation)' }),
  opened_at: T.String(),
  expires_at: T.String(),
  state: T.Union([T.Literal('open'), T.Literal('ended')]),
  released: T.Union([T.Integer(), T.Null()], { description: 'Ended: max − spent, what the run did not spend (never held from the agent); null while open' }),
})

export const RunList = T.Object({ runs: T.Array(Run) })
