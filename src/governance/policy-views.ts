/**
 * Policies (docs/api.md §5): the account's daily cap, balance cap, allowlist and warning levels
 * (§13a), and each agent's
 * daily cap, allowlist and per-call maximum — exactly the fields debit.lua enforces.
 * An agent token reads only its own agent's policy; only the owner token may change them.
 * errors: FORBIDDEN (balance_cap is the founder's), BAD_REQUEST (a cap, budget, breaker rate or
 *         allowlist out of PUT /v1/policies' bounds, checked here for every caller; a pattern),
 *         NOT_FOUND (agent id).
 */
import { Type as T, type TSchema } from '@sinclair/typebox'
import type { Principal } from '../auth/principal'
import { ApiError } from '../errors'
import { checkField } from '../schema-check'
import { encodeAllowlist } from './allowlist'
import { IdenticalPerMinute, NullableCredits, Thresholds } from './model'
import { applyPolicyChange, encodeThresholds, readAccountPolicy, readAgentPolicies, type FieldChanges, type PolicyChange } from './policies'
import type { RedisContext } from '../redis/context'

export async function policiesOf(ctx: RedisContext, p: Pick<Principal, 'accountId' | 'agentId'>) {
  const [account, agents] = await Promise.all([readAccountPolicy(ctx, p.accountId), readAgentPolicies(ctx, p.accountId, p.agentId ?? undefined)])
  return { account, agents }
}

interface Patch {
  daily_cap?: number | null
  allowlist?: string[] | null
  per_call_max?: number | null
  /** An agent's lifetime budget (docs/api.md §8). */
  budget?: number | null
  balance_cap?: unknown
  breaker?: { credits_per_minute?: number | null; identical_per_minute?: number | null }
  /** The account's warning levels (docs/api.md §13a); null = back to the default. */
  thresholds?: number[] | null
}

export interface PoliciesPatch {
  account?: Patch
  agents?: Record<string, Patch>
}

export async function putPolicies(ctx: RedisContext, acct: string, body: PoliciesPatch) {
  if (body.account && 'balance_cap' in body.account)
    throw new ApiError('FORBIDDEN', { role: 'founder (service owner): the balance cap is not the operator\'s to change' })
  const change: PolicyChange = {}
  if (body.account) change.account = fields(body.account, 'account')
  if (body.agents) change.agents = Object.fromEntries(Object.entries(body.agents).map(([id, p]) => [id, fields(p, `agents.${id}`)]))
  await applyPolicyChange(ctx, acct, change)
  return policiesOf(ctx, { accountId: acct, agentId: null })
}

const NullableIdentical = T.Union([IdenticalPerMinute, T.Null()])
const NullableThresholds = T.Union([Thresholds, T.Null()])

/**
 * The bounds PUT /v1/policies' body model is built from, for every caller (the allowlist's are
 * checked where every allowlist is encoded).
 */
function checkPatch(p: Patch, at: string): void {
  const check = (schema: TSchema, v: unknown, name: string) => {
    if (v !== undefined) checkField(schema, v, `${at}.${name}`)
  }
  check(NullableCredits, p.daily_cap, 'daily_cap')
  check(NullableCredits, p.per_call_max, 'per_call_max')
  check(NullableCredits, p.budget, 'budget')
  check(NullableCredits, p.breaker?.credits_per_minute, 'breaker.credits_per_minute')
  check(NullableIdentical, p.breaker?.identical_per_minute, 'breaker.identical_per_minute')
  check(NullableThresholds, p.thresholds, 'thresholds')
}

/** Request fields → hash fields; null removes a field (no limit, or the default). */
function fields(p: Patch, at: string): FieldChanges {
  checkPatch(p, at)
  const out: FieldChanges = {}
  if (p.daily_cap !== undefined) out.daily_cap = p.daily_cap
  if (p.per_call_max !== undefined) out.per_call_max = p.per_call_max
  if (p.budget !== undefined) out.budget = p.budget
  if (p.allowlist !== undefined) out.allow = encodeAllowlist(p.allowlist, `${at}.allowlist`)
  if (p.breaker?.credits_per_minute !== undefined) out.brk_credits = p.breaker.credits_per_minute
  if (p.breaker?.identical_per_minute !== undefined) out.brk_same = p.breaker.identical_per_minute
  if (p.thresholds !== undefined && at !== 'account')
    throw new ApiError('BAD_REQUEST', { field: `${at}.thresholds`, expected: 'warning levels are the account\'s: set account.thresholds' })
  if (p.thresholds !== undefined) out.thresholds = p.thresholds === null ? null : encodeThresholds(p.thresholds)
  return out
}
