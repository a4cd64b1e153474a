/**
 * The refusals debit-13 and authorize-4 share (token, agent state, rate limit, policies, caps,
 * Idempotency-Key), decoded once from their tuples into named fields. ledger/denials.ts turns a
 * Refusal into the error registry's answer.
 */
import { ScriptStatus as S } from '../redis/codes'
import { num, statusOf, str, type Reply } from './reply'

export type Refusal =
  | { status: 'unauthorized' }
  /** The agent hash's kill_reason: `operator` (a kill by hand) or `breaker` (runaway spend). */
  | { status: 'agent_killed'; reason: string }
  | { status: 'agent_revoked' }
  | { status: 'rate_limited'; retryAfterMs: number; limit: number }
  | { status: 'agent_allowlist' }
  | { status: 'account_allowlist' }
  | { status: 'per_call_max'; cap: number; price: number }
  | { status: 'agent_daily_cap'; cap: number; spent: number }
  | { status: 'daily_cap'; cap: number; spent: number }
  | { status: 'request_cap'; cap: number; used: number }
  | { status: 'idempotency_mismatch' }
  | { status: 'idempotency_in_flight' }

/** The refusal a tuple holds, or null when its status is not one of them. */
export function refusalOf(reply: Reply): Refusal | null {
  switch (statusOf(reply)) {
    case S.UNAUTHORIZED:
      return { status: 'unauthorized' }
    case S.AGENT_KILLED:
      return { status: 'agent_killed', reason: str(reply, 2) || 'operator' }
    case S.AGENT_REVOKED:
      return { status: 'agent_revoked' }
    case S.RATE_LIMITED:
      return { status: 'rate_limited', retryAfterMs: num(reply, 2), limit: num(reply, 3) }
    case S.DENIED_AGENT_ALLOWLIST:
      return { status: 'agent_allowlist' }
    case S.DENIED_ACCOUNT_ALLOWLIST:
      return { status: 'account_allowlist' }
    case S.DENIED_PER_CALL_MAX:
      return { status: 'per_call_max', cap: num(reply, 2), price: num(reply, 3) }
    case S.DENIED_AGENT_DAILY_CAP:
      return { status: 'agent_daily_cap', cap: num(reply, 2), spent: num(reply, 3) }
    case S.DAILY_CAP_REACHED:
      return { status: 'daily_cap', cap: num(reply, 2), spent: num(reply, 3) }
    case S.REQUEST_CAP_REACHED:
      return { status: 'request_cap', cap: num(reply, 2), used: num(reply, 3) }
    case S.IDEMPOTENCY_MISMATCH:
      return { status: 'idempotency_mismatch' }
    case S.IDEMPOTENCY_IN_FLIGHT:
      return { status: 'idempotency_in_flight' }
    default:
      return null
  }
}
