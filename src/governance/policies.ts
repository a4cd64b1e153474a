/**
 * Account and agent policies: read from the hash fields debit.lua enforces, written by set-policy.lua.
 * A change touching the account and several agents runs all its scripts in one MULTI (they share
 * the account's slot), so the next call on any instance sees either none or all of it.
 * errors: NOT_FOUND (an agent id that is not the account's), CONFLICT (a revoked agent).
 */
import type { RedisContext } from '../redis/context'
import { ApiError } from '../errors'
import { runSetPolicies, type PolicyWrite } from '../lua/agents'
import { decodeAllowlist } from './allowlist'
import { AGENT_ID } from './agents'
import { DEFAULT_THRESHOLDS } from './model'
import { readAccount } from '../redis/account-hash'
import { applyRaises, type RaisedView } from './raises'

/** One field change: a value to set, or null to remove the field (= no limit / default). */
export type FieldChanges = Record<string, string | number | null>

export interface PolicyChange {
  account?: FieldChanges
  agents?: Record<string, FieldChanges>
}

export interface AccountPolicy {
  daily_cap: number
  balance_cap: number
  allowlist: string[] | null
  /** Warning levels of every daily cap and agent budget, ascending (docs/api.md §13a); [] = off. */
  thresholds: number[]
  /** Standing temporary raises (docs/api.md §13b); absent when none. */
  raised?: RaisedView
}

export interface AgentPolicy {
  daily_cap: number | null
  allowlist: string[] | null
  per_call_max: number | null
  /** The runaway-agent breaker as it applies (the agent's own values, else the deployment defaults; 0 = rule off). */
  breaker: { credits_per_minute: number; identical_per_minute: number }
  /** Lifetime credits of the agent and its subtree (docs/api.md §8); null = none. */
  budget: number | null
  spent_total: number
  parent_id: string | null
  depth: number
  expires_at: string | null
  /** Standing temporary raises (docs/api.md §13b); absent when none. */
  raised?: RaisedView
}

const optNum = (v: string | null | undefined) => (v === null || v === undefined ? null : Number(v))

export async function readAccountPolicy(ctx: RedisContext, acct: string): Promise<AccountPolicy> {
  const a = await readAccount(ctx, acct, 'daily_cap', 'allow', 'balance_cap', 'thresholds', 'raises')
  const { fields, raised } = applyRaises(a.raises, ctx.clock.now(), { daily_cap: a.daily_cap === null ? null : String(a.daily_cap), allow: a.allow })
  return {
    daily_cap: optNum(fields.daily_cap) ?? ctx.cfg.DEFAULT_DAILY_CAP,
    balance_cap: a.balance_cap ?? ctx.cfg.DEFAULT_BALANCE_CAP,
    allowlist: decodeAllowlist(fields.allow),
    thresholds: decodeThresholds(a.thresholds),
    ...(raised ? { raised } : {}),
  }
}

/** The hash's `thresholds` field: absent = the default, '' = none, else percentages joined by ','. */
export function decodeThresholds(v: string | null): number[] {
  if (v === null) return [...DEFAULT_THRESHOLDS]
  return v === '' ? [] : v.split(',').map(Number)
}

/** Levels as the hash keeps them (lua/lib/thresholds.lua reads them ascending). */
export function encodeThresholds(levels: readonly number[]): string {
  return [...levels].sort((a, b) => a - b).join(',')
}

/** Policies of the account's agents that can still act (revoked ones are gone for good). */
export async function readAgentPolicies(ctx: RedisContext, acct: string, only?: string): Promise<Record<string, AgentPolicy>> {
  const { redis, keys } = ctx
  const ids = only ? [only] : await redis.smembers(keys.agents(acct))
  const rows = await Promise.all(
    ids.map((id) =>
      redis.hmget(keys.agent(acct, id), 'token', 'state', 'daily_cap', 'allow', 'per_call_max', 'brk_credits', 'brk_same', 'budget', 'spent_total', 'parent', 'depth', 'expires', 'raises'),
    ),
  )
  const out: Record<string, AgentPolicy> = {}
  ids
    .map((id, i) => [id, rows[i]!] as const)
    .filter(([, r]) => r[0] && r[1] !== 'revoked')
    .sort(([a], [b]) => a.localeCompare(b))
    .forEach(([id, [, , storedCap, storedAllow, perCallMax, brkCredits, brkSame, storedBudget, spentTotal, parent, depth, expires, raises]]) => {
      const { fields, raised } = applyRaises(raises, ctx.clock.now(), { daily_cap: storedCap, allow: storedAllow, budget: storedBudget })
      const { daily_cap: dailyCap, allow, budget } = fields
      const breaker = {
        credits_per_minute: optNum(brkCredits) ?? ctx.cfg.BREAKER_CREDITS_PER_MINUTE,
        identical_per_minute: optNum(brkSame) ?? ctx.cfg.BREAKER_IDENTICAL_PER_MINUTE,
      }
      out[id] = {
        daily_cap: optNum(dailyCap),
        allowlist: decodeAllowlist(allow),
        per_call_max: optNum(perCallMax),
        breaker,
        budget: optNum(budget),
        spent_total: Number(spentTotal ?? 0),
        parent_id: parent ?? null,
        depth: Number(depth ?? 1),
        expires_at: expires ? new Date(Number(expires)).toISOString() : null,
        ...(raised ? { raised } : {}),
      }
    })
  return out
}

/**
 * Applies a change atomically. Every agent id must be the account's and not revoked. Agents are
 * never deleted, so the existence check made before the MULTI still holds in it; an agent revoked
 * in between at worst receives a policy it will never use.
 */
export async function applyPolicyChange(ctx: RedisContext, acct: string, change: PolicyChange): Promise<void> {
  const { redis, keys } = ctx
  const agentIds = Object.keys(change.agents ?? {})
  const found = await Promise.all(agentIds.map((id) => (AGENT_ID.test(id) ? redis.hmget(keys.agent(acct, id), 'token', 'state', 'parent') : [null, null, null])))
  const missing = agentIds.find((_, i) => !found[i]![0])
  if (missing !== undefined) throw new ApiError('NOT_FOUND', { resource: 'agent', agent_id: missing })
  const revoked = agentIds.find((_, i) => found[i]![1] === 'revoked')
  if (revoked !== undefined) throw new ApiError('CONFLICT', { reason: `agent ${revoked} is revoked for good; its policy no longer matters` })

  const writes: PolicyWrite[] = []
  if (change.account && Object.keys(change.account).length > 0) writes.push({ agentId: null, fields: change.account })
  // A sub-agent's parent never changes: its budget change moves the parent's carve (set-policy.lua).
  for (const [i, [id, fields]] of Object.entries(change.agents ?? {}).entries())
    if (Object.keys(fields).length > 0) writes.push({ agentId: id, parentId: found[i]![2] ?? null, fields })
  if (writes.length === 0) return
  const replies = await runSetPolicies(ctx, acct, ctx.clock.now(), writes)
  if (replies.some((r) => r.status === 'not_found')) throw new ApiError('NOT_FOUND', { resource: change.agents ? 'agent' : 'account' })
}
