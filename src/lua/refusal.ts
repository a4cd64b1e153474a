/**
 * The refusals debit.lua and authorize.lua share (token, agent state, rate limit, policies, caps,
 * Idempotency-Key), decoded once from their tuples into named fields. ledger/denials.ts turns a
 * Refusal into the error registry's answer.
 */
import { ScriptStatus as S } from '../redis/codes'
import { num, statusOf, str, type Reply } from './reply'

export type Refusal =
  | { status: 'unauthorized' }
  /**
   * The agent hash's kill_reason: `operator` (a kill by hand) or `breaker` (runaway spend).
   * `byAncestor`: the killed ancestor that stops this sub-agent (docs/api.md §8), else null.
   */
  | { status: 'agent_killed'; reason: string; byAncestor: string | null }
  /** `reason` expired: past its `expires_at` (the agent's own, or `byAncestor`'s). */
  | { status: 'agent_revoked'; reason: 'expired' | null; byAncestor: string | null }
  | { status: 'rate_limited'; retryAfterMs: number; limit: number }
  | { status: 'agent_allowlist'; byAncestor: string | null }
  | { status: 'account_allowlist' }
  | { status: 'per_call_max'; cap: number; price: number; byAncestor: string | null }
  /** A lifetime budget (the agent's, or `byAncestor`'s, whose spent_total counts its subtree). */
  | { status: 'agent_budget'; budget: number; spent: number; byAncestor: string | null }
  | { status: 'agent_daily_cap'; cap: number; spent: number; byAncestor: string | null }
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
      return { status: 'agent_killed', reason: str(reply, 2) || 'operator', byAncestor: str(reply, 3) || null }
    case S.AGENT_REVOKED:
      return { status: 'agent_revoked', reason: str(reply, 2) === 'expired' ? 'expired' : null, byAncestor: str(reply, 3) || null }
    case S.RATE_LIMITED:
      return { status: 'rate_limited', retryAfterMs: num(reply, 2), limit: num(reply, 3) }
    case S.DENIED_AGENT_ALLOWLIST:
      return { status: 'agent_allowlist', byAncestor: str(reply, 2) || null }
    case S.DENIED_ACCOUNT_ALLOWLIST:
      return { status: 'account_allowlist' }
    case S.DENIED_PER_CALL_MAX:
      return { status: 'per_call_max', cap: num(reply, 2), price: num(reply, 3), byAncestor: str(reply, 4) || null }
    case S.DENIED_AGENT_BUDGET:
      return { status: 'agent_budget', budget: num(reply, 2), spent: num(reply, 3), byAncestor: str(reply, 4) || null }
    case S.DENIED_AGENT_DAILY_CAP:
      return { status: 'agent_daily_cap', cap: num(reply, 2), spent: num(reply, 3), byAncestor: str(reply, 4) || null }
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
