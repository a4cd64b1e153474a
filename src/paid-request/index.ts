/**
 * The paid request, one package for both front doors (docs/architecture.md). Its files in the order
 * a request flows through them:
 *   capability.ts, proxied.ts  the two ways in: a capability call, a proxied request (front doors hand over here)
 *   metered.ts                 a metered request's debit arguments, forwarded body and usage at its end
 *   run-header.ts              an X-Budget-Run header read (docs/api.md §13c)
 *   open.ts → debit.ts         the reservation: debit.lua, one script (every check, the debit, its entry)
 *   leases.ts                  a stream's in-flight deadline, renewed while it runs
 *   read-ahead.ts, relay.ts, metered-relay.ts   the provider's answer relayed (after upstream/request.ts)
 *   debited-call.ts            settle once, by the outcome table (outcome.ts)
 *   refund.ts                  a refunded ending's credits back, along the agent chain
 *   calls.ts → call-filing.ts  the call filed for activity (record-calls.lua, batched per turn)
 *   provider-failure.ts        a refunded ending's answer
 *   sweeper.ts                 a request that never settled, refunded at its deadline
 */
export { openPaidCall, type OpenedCall, type PaidCallDeps, type PaidCallRequest } from './open'
export { DebitedCall, type SettleFacts, type Settlement } from './debited-call'
export { CALL_OUTCOMES, isRefunded, SETTLEMENT, usageAtSettle, type CallOutcome } from './outcome'
export { providerFailure } from './provider-failure'
