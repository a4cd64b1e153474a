/**
 * Maps a script's refusal (decoded once in lua/refusal.ts) to the error registry: the one place where a ScriptStatus becomes an
 * ApiError, so every route that runs debit.lua or authorize.lua answers the same codes and context.
 */
import { ApiError } from '../errors'
import type { Refusal } from './refusal'
import { rateHeaders } from '../windows'

const RAISE_VIA = 'PUT /v1/policies'
/**
 * A refusal that an operator's approval could lift names the proposal (docs/api.md §11) that would
 * help, and that it may ask for a time only (docs/api.md §13b).
 */
const propose = (kind: string) => ({ propose_via: 'POST /v1/proposals', kind, propose_temporary: TEMPORARY })
const TEMPORARY = 'add for_s (60 to 2592000 seconds) to ask for a temporary raise: approved, it lapses by itself after that long'

export function denial(r: Refusal, ctx: { agentId: string | null; resetsAt: string }): ApiError {
  switch (r.status) {
    case 'unauthorized':
      return new ApiError('UNAUTHORIZED')
    case 'agent_killed':
      return new ApiError('AGENT_KILLED', { agent_id: ctx.agentId, reason: r.reason, ...byAncestor(r.byAncestor) })
    case 'agent_revoked':
      return new ApiError('AGENT_REVOKED', { agent_id: ctx.agentId, ...(r.reason ? { reason: r.reason } : {}), ...byAncestor(r.byAncestor) })
    case 'rate_limited': {
      const retry = Math.max(1, Math.ceil(r.retryAfterMs / 1000))
      return new ApiError('RATE_LIMITED', { retry_after_s: retry }, { 'retry-after': String(retry), ...rateHeaders(r.limit, 0, r.retryAfterMs) })
    }
    case 'agent_allowlist':
      return policy('agent_allowlist', { ...propose('allow'), ...byAncestor(r.byAncestor) })
    case 'account_allowlist':
      return policy('account_allowlist')
    case 'per_call_max':
      return policy('per_call_max', { cap: r.cap, price: r.price, ...byAncestor(r.byAncestor) })
    case 'agent_budget':
      return policy('agent_budget', { budget: r.budget, spent_total: r.spent, ...byAncestor(r.byAncestor), ...propose('raise_budget') })
    case 'agent_daily_cap':
      return policy('agent_daily_cap', { cap: r.cap, spent: r.spent, resets_at: ctx.resetsAt, ...propose('raise_daily_cap'), ...byAncestor(r.byAncestor) })
    case 'daily_cap':
      return new ApiError('DAILY_CAP_REACHED', { cap: r.cap, spent: r.spent, resets_at: ctx.resetsAt, raise_via: RAISE_VIA, ...propose('raise_daily_cap') })
    case 'request_cap':
      return new ApiError('REQUEST_CAP_REACHED', { cap: r.cap, used: r.used, resets_at: ctx.resetsAt })
    case 'idempotency_mismatch':
      return new ApiError('CONFLICT', { reason: 'this Idempotency-Key was used with a different request' })
    case 'idempotency_in_flight':
      return new ApiError('CONFLICT', { reason: 'a request with this Idempotency-Key is still in flight; retry shortly' })
  }
}

/**
 * A run budget's refusal (docs/api.md §13c): spent up (`exhausted`), past its TTL (`ended`), or
 * opened by an agent that is neither the caller nor one of its ancestors (`other_agent`). A run is
 * the agent's own ceiling: a new run id opens a new run (the agent's own limits still apply).
 */
export function runDenial(r: { runId: string; reason: string; max: number; spent: number; expiresAt: number }): ApiError {
  return new ApiError('POLICY_DENIED', {
    rule: 'run_budget',
    run_id: r.runId,
    reason: r.reason,
    max: r.max,
    spent: r.spent,
    expires_at: new Date(r.expiresAt).toISOString(),
    raised_by: 'agent',
    raise_via: 'X-Budget-Run with a new run id',
  })
}

/** A sub-agent stopped or limited by an ancestor names it (docs/api.md §8). */
const byAncestor = (id: string | null) => (id ? { by_ancestor: id } : {})

function policy(rule: string, extra: Record<string, unknown> = {}): ApiError {
  return new ApiError('POLICY_DENIED', { rule, raised_by: 'operator', raise_via: RAISE_VIA, ...extra })
}
