/** The paid-request pipeline: open (debit) → DebitedCall → settle once (docs/architecture.md). */
export { openPaidCall, type OpenedCall, type PaidCallDeps, type PaidCallRequest } from './open'
export { DebitedCall, type SettleFacts, type Settlement } from './debited-call'
export { CALL_OUTCOMES, isRefunded, SETTLEMENT, usageAtSettle, type CallOutcome } from './outcome'
export { providerFailure } from './provider-failure'
export { parseRunHeader, runBudgetOf, RUN_HEADER, RUN_META, RUN_KEPT_S, type RunBudget } from '../run-header'
