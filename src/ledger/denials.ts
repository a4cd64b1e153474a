/**
 * Maps a script's denial tuple to the error registry: the one place where a ScriptStatus becomes an
 * ApiError, so every route that runs debit-13 or authorize-4 answers the same codes and context.
 */
import { ApiError } from '../errors'
import { ScriptStatus as S } from '../redis/codes'
import { rateHeaders } from './windows'

const RAISE_VIA = 'PUT /v1/policies'

export type Reply = (string | number | null)[]

export function denial(reply: Reply, ctx: { agentId: string | null; resetsAt: string }): ApiError {
  const [status, , a, b] = reply as [number, number, number, number]
  switch (status) {
    case S.UNAUTHORIZED:
      return new ApiError('UNAUTHORIZED')
    case S.AGENT_KILLED:
      // The reason the agent hash stores: `operator` (a kill by hand) or `breaker` (runaway spend).
      return new ApiError('AGENT_KILLED', { agent_id: ctx.agentId, reason: typeof a === 'string' && a ? a : 'operator' })
    case S.AGENT_REVOKED:
      return new ApiError('AGENT_REVOKED', { agent_id: ctx.agentId })
    case S.RATE_LIMITED: {
      const retry = Math.max(1, Math.ceil(a / 1000))
      return new ApiError('RATE_LIMITED', { retry_after_s: retry }, { 'retry-after': String(retry), ...rateHeaders(b, 0, a) })
    }
    case S.DENIED_AGENT_ALLOWLIST:
      return policy('agent_allowlist')
    case S.DENIED_ACCOUNT_ALLOWLIST:
      return policy('account_allowlist')
    case S.DENIED_PER_CALL_MAX:
      return policy('per_call_max', { cap: a, price: b })
    case S.DENIED_AGENT_DAILY_CAP:
      return policy('agent_daily_cap', { cap: a, spent: b, resets_at: ctx.resetsAt })
    case S.DAILY_CAP_REACHED:
      return new ApiError('DAILY_CAP_REACHED', { cap: a, spent: b, resets_at: ctx.resetsAt, raise_via: RAISE_VIA })
    case S.REQUEST_CAP_REACHED:
      return new ApiError('REQUEST_CAP_REACHED', { cap: a, used: b, resets_at: ctx.resetsAt })
    case S.IDEMPOTENCY_MISMATCH:
      return new ApiError('CONFLICT', { reason: 'this Idempotency-Key was used with a different request' })
    case S.IDEMPOTENCY_IN_FLIGHT:
      return new ApiError('CONFLICT', { reason: 'a request with this Idempotency-Key is still in flight; retry shortly' })
    default:
      throw new Error(`script status ${status} has no error mapping`)
  }
}

function policy(rule: string, extra: Record<string, unknown> = {}): ApiError {
  return new ApiError('POLICY_DENIED', { rule, raised_by: 'operator', raise_via: RAISE_VIA, ...extra })
}
