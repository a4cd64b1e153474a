/**
 * Governance writes: create-agent-3, agent-state-2 and set-policy-2 (see their Lua headers).
 */
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import { num, statusOf, unexpected, type Reply } from './reply'

export interface CreateAgentArgs {
  now: number
  accountId: string
  agentId: string
  tokenHash: string
  name: string
  maxAgents: number
  dailyCap: number | null
  /** null = no allowlist (everything); [] joined = '' = allow nothing. */
  allow: string | null
  perCallMax: number | null
}

export type CreateAgentReply = { status: 'ok'; version: number } | { status: 'already_applied' } | { status: 'limit_reached'; max: number }

export async function runCreateAgent(ctx: RedisContext, a: CreateAgentArgs): Promise<CreateAgentReply> {
  const { keys } = ctx
  const reply = await ctx.scripts.createAgent(
    [keys.agent(a.accountId, a.agentId), keys.agents(a.accountId), keys.outbox(keys.shardOf(a.accountId))],
    [a.now, a.accountId, a.agentId, a.tokenHash, a.name, a.maxAgents, a.dailyCap ?? '', a.allow === null ? '0' : '1', a.allow ?? '', a.perCallMax ?? ''],
  )
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', version: num(reply, 1) }
    case S.ALREADY_APPLIED:
      return { status: 'already_applied' }
    case S.LIMIT_REACHED:
      return { status: 'limit_reached', max: num(reply, 1) }
    default:
      throw unexpected('create-agent-3', reply)
  }
}

export type AgentAction = 'kill' | 'revive' | 'revoke'

export interface AgentStateArgs {
  now: number
  accountId: string
  agentId: string
  action: AgentAction
  /** Where the operator acted, named in the agent.* event. */
  via: 'api' | 'chat'
}

export type AgentStateReply =
  | { status: 'ok'; version: number }
  /** Already in that state: nothing changed. */
  | { status: 'already_applied'; version: number }
  | { status: 'agent_revoked' }
  | { status: 'not_found' }

export async function runAgentState(ctx: RedisContext, a: AgentStateArgs): Promise<AgentStateReply> {
  const { keys } = ctx
  const reply = await ctx.scripts.agentState([keys.agent(a.accountId, a.agentId), keys.outbox(keys.shardOf(a.accountId))], [a.now, a.accountId, a.agentId, a.action, a.via])
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', version: num(reply, 1) }
    case S.ALREADY_APPLIED:
      return { status: 'already_applied', version: num(reply, 1) }
    case S.AGENT_REVOKED:
      return { status: 'agent_revoked' }
    case S.NOT_FOUND:
      return { status: 'not_found' }
    default:
      throw unexpected('agent-state-2', reply)
  }
}

/** One field change: a value to set, or null to remove the field (= no limit / default). */
export type PolicyFields = Record<string, string | number | null>

/** One set-policy-2 run: the account's policy (agentId null) or one agent's. */
export interface PolicyWrite {
  agentId: string | null
  fields: PolicyFields
}

export type SetPolicyReply = { status: 'ok'; version: number } | { status: 'not_found' }

function triplets(changes: PolicyFields): (string | number)[] {
  return Object.entries(changes).flatMap(([field, v]) => (v === null ? [field, 'del', ''] : [field, 'set', v]))
}

function decodeSetPolicy(reply: Reply): SetPolicyReply {
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', version: num(reply, 1) }
    case S.NOT_FOUND:
      return { status: 'not_found' }
    default:
      throw unexpected('set-policy-2', reply)
  }
}

/**
 * Runs several set-policy-2 of one account in one MULTI (they share the account's slot), so the
 * next call on any instance sees either none or all of them. One reply per write, in order.
 */
export async function runSetPolicies(ctx: RedisContext, accountId: string, now: number, writes: PolicyWrite[]): Promise<SetPolicyReply[]> {
  const { redis, keys } = ctx
  const outbox = keys.outbox(keys.shardOf(accountId))
  // defineCommand registers set-policy-2 on transactions too (EVAL on first use per connection).
  const multi = redis.multi() as unknown as { setPolicy(...a: (string | number)[]): void; exec(): Promise<[Error | null, unknown][] | null> }
  for (const w of writes) {
    const hash = w.agentId === null ? keys.account(accountId) : keys.agent(accountId, w.agentId)
    multi.setPolicy(hash, outbox, now, w.agentId === null ? 'account' : 'agent', accountId, w.agentId ?? '', ...triplets(w.fields))
  }
  const results = await multi.exec()
  if (!results) throw new Error('set-policy: transaction aborted')
  return results.map(([err, reply]) => {
    if (err) throw err
    return decodeSetPolicy(reply as Reply)
  })
}
