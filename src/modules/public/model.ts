import { Type as T } from '@sinclair/typebox'

export const StatusResponse = T.Object({
  status: T.Union([T.Literal('ok'), T.Literal('degraded')]),
  degraded: T.Array(T.Object({ reason: T.String(), detail: T.String() }), { description: 'Why the status is degraded (empty when ok)' }),
  version: T.String(),
  redis: T.Union([T.Literal('ok'), T.Literal('down')]),
  postgres: T.Union([T.Literal('ok'), T.Literal('down')]),
  ledger_lag: T.Object({ entries: T.Integer(), oldest_ms: T.Integer() }),
  signups: T.Union([T.Literal('open'), T.Literal('paused')]),
  payments: T.Union([T.Literal('sandbox'), T.Literal('stripe')], { description: 'sandbox: development only, no money moves (test card pages)' }),
  paused: T.Array(T.String()),
  unavailable: T.Array(T.String()),
})

export const PublicStatsResponse = T.Object({
  organic_calls_routed: T.Integer({ description: 'Successful, non-refunded calls and proxy requests' }),
  credits_honored: T.Integer({ description: 'Credits those calls debited' }),
})
