/**
 * Governance writes: create-agent.lua, agent-state.lua, recount-agents.lua, release-expired.lua and
 * set-policy.lua (see their Lua headers).
 */
import { ScriptStatus as S } from '../redis/codes'
import { readScripts } from '../redis/scripts'
import type { RedisContext } from '../redis/context'
import { refusalOf, type Refusal } from './refusal'
import { num, statusOf, str, unexpected, type Reply } from './reply'

export interface CreateAgentArgs {
  now: number
  accountId: string
  agentId: string
  tokenHash: string
  name: string
  /** The most live agents (not revoked, not expired) the account may hold. */
  maxAgents: number
  dailyCap: number | null
  /** null = no allowlist (everything); [] joined = '' = allow nothing. */
  allow: string | null
  perCallMax: number | null
  /** The new agent's ancestors, parent first ([] = a top-level agent of the operator; at most 3). */
  chain: readonly string[]
  /** Lifetime credits; null = none (a sub-agent always has one). */
  budget: number | null
  ttlMs: number | null
  maxDepth: number
  via: 'api' | 'chat'
}

export type CreateAgentReply =
  | { status: 'ok'; version: number; depth: number; expiresAt: number | null }
  | { status: 'already_applied' }
  | { status: 'limit_reached'; max: number }
  /** The account's agents are older than its live-agent set: runRecountAgents, then create again. */
  | { status: 'recount' }
  /** The parent (or an ancestor) is gone. */
  | { status: 'not_found' }
  | { status: 'max_depth'; max: number }
  | { status: 'exceeds_parent'; field: string; limit: string }
  | Refusal

/** How many times expired agents are released before the create gives up (each pass releases every one listed). */
const RELEASE_ATTEMPTS = 5

/**
 * Runs create-agent.lua. While the account's live-agent set still holds an agent past its expiry, the
 * script answers RELEASE_EXPIRED: the expired agents give their carve back (runReleaseExpired) and
 * the create runs again, so a parent's budget is never held by children that can spend nothing.
 */
export async function runCreateAgent(ctx: RedisContext, a: CreateAgentArgs): Promise<CreateAgentReply> {
  for (let attempt = 0; attempt < RELEASE_ATTEMPTS; attempt++) {
    const reply = await createAgentOnce(ctx, a)
    if (reply !== 'release_expired') return reply
    await runReleaseExpired(ctx, a.accountId, a.now)
  }
  throw new Error(`create-agent: the agents of ${a.accountId} kept expiring while released`)
}

/**
 * Gives the carve of every agent of the account past its expiry back to its parent and takes it
 * out of the live-agent set (release-expired.lua). The expired lineages are listed first; the
 * script re-checks each one (gone or not expired: skipped), so the listing decides nothing.
 * Returns how many were released.
 */
export async function runReleaseExpired(ctx: RedisContext, accountId: string, now: number): Promise<number> {
  const { keys, redis } = ctx
  const members = await redis.zrangebyscore(keys.liveAgents(accountId), '-inf', now)
  if (members.length === 0) return 0
  const hashes = members.flatMap((m) => {
    const [agent, parent] = m.split(',')
    const own = keys.agent(accountId, agent!)
    return [own, parent ? keys.agent(accountId, parent) : own]
  })
  const reply = await ctx.scripts.releaseExpired([keys.liveAgents(accountId), ...hashes], [now, ...members])
  if (statusOf(reply) !== S.OK) throw unexpected('release-expired.lua', reply)
  return num(reply, 1)
}

async function createAgentOnce(ctx: RedisContext, a: CreateAgentArgs): Promise<CreateAgentReply | 'release_expired'> {
  const { keys } = ctx
  const self = keys.agent(a.accountId, a.agentId)
  // Ancestor slots past the chain repeat the agent's own key: same slot, never read.
  const ancestors = [0, 1, 2].map((i) => (a.chain[i] ? keys.agent(a.accountId, a.chain[i]!) : self))
  const reply = await ctx.scripts.createAgent(
    [self, keys.agents(a.accountId), keys.outbox(keys.shardOf(a.accountId)), ...ancestors, keys.liveAgents(a.accountId)],
    [
      a.now,
      a.accountId,
      a.agentId,
      a.tokenHash,
      a.name,
      a.maxAgents,
      a.dailyCap ?? '',
      a.allow === null ? '0' : '1',
      a.allow ?? '',
      a.perCallMax ?? '',
      a.chain.join(','),
      a.budget ?? '',
      a.ttlMs ?? '',
      a.maxDepth,
      a.via,
    ],
  )
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', version: num(reply, 1), depth: num(reply, 2), expiresAt: str(reply, 3) === '' ? null : num(reply, 3) }
    case S.ALREADY_APPLIED:
      return { status: 'already_applied' }
    case S.LIMIT_REACHED:
      return { status: 'limit_reached', max: num(reply, 1) }
    case S.RECOUNT_AGENTS:
      return { status: 'recount' }
    case S.RELEASE_EXPIRED:
      return 'release_expired'
    case S.NOT_FOUND:
      return { status: 'not_found' }
    case S.DENIED_MAX_DEPTH:
      return { status: 'max_depth', max: num(reply, 1) }
    case S.DENIED_EXCEEDS_PARENT:
      return { status: 'exceeds_parent', field: str(reply, 1), limit: str(reply, 2) }
  }
  const refusal = refusalOf(reply)
  if (!refusal) throw unexpected('create-agent.lua', reply)
  return refusal
}

export type AgentAction = 'kill' | 'revive' | 'revoke'

export interface AgentStateArgs {
  now: number
  accountId: string
  agentId: string
  action: AgentAction
  /** Where the operator acted, named in the agent.* event. */
  via: 'api' | 'chat'
  /** The target's parent (a revoke gives its carve back); null for a top-level agent. */
  parentId: string | null
  /** The agent acting on its own descendant; null for the operator. */
  actorId: string | null
}

export type AgentStateReply =
  | { status: 'ok'; version: number }
  /** Already in that state: nothing changed. */
  | { status: 'already_applied'; version: number }
  | { status: 'agent_revoked' }
  | { status: 'not_found' }

export async function runAgentState(ctx: RedisContext, a: AgentStateArgs): Promise<AgentStateReply> {
  const { keys } = ctx
  const self = keys.agent(a.accountId, a.agentId)
  const parent = a.parentId ? keys.agent(a.accountId, a.parentId) : self
  const reply = await ctx.scripts.agentState([self, keys.outbox(keys.shardOf(a.accountId)), parent, keys.liveAgents(a.accountId)], [a.now, a.accountId, a.agentId, a.action, a.via, a.actorId ?? ''])
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
      throw unexpected('agent-state.lua', reply)
  }
}

/** How many times the account's agents are listed again when a create lands between list and count. */
const RECOUNT_ATTEMPTS = 5

/**
 * Builds the account's live-agent set from its agent hashes (recount-agents.lua): the account's
 * agents are listed, and the script counts them only if the list is still the set. `replace`
 * (ledger:rebuild) rebuilds a set that exists; else one that exists is left as it is.
 * Returns the live agents counted.
 */
export async function runRecountAgents(ctx: RedisContext, accountId: string, o: { now: number; replace: boolean }): Promise<number> {
  const { keys, redis } = ctx
  for (let attempt = 0; attempt < RECOUNT_ATTEMPTS; attempt++) {
    const ids = await redis.smembers(keys.agents(accountId))
    const reply = await ctx.scripts.recountAgents(
      [keys.agents(accountId), keys.liveAgents(accountId), ...ids.map((id) => keys.agent(accountId, id))],
      [o.now, o.replace ? '1' : '0', ...ids],
    )
    switch (statusOf(reply)) {
      case S.OK:
      case S.ALREADY_APPLIED:
        return num(reply, 1)
      case S.AGENTS_CHANGED:
        continue
      default:
        throw unexpected('recount-agents.lua', reply)
    }
  }
  throw new Error(`recount-agents: the agents of ${accountId} kept changing while counted`)
}

/** One field change: a value to set, or null to remove the field (= no limit / default). */
export type PolicyFields = Record<string, string | number | null>

/** One set-policy.lua run: the account's policy (agentId null) or one agent's. */
export interface PolicyWrite {
  agentId: string | null
  /** A sub-agent's parent, whose carve follows a change of its budget. */
  parentId?: string | null
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
      throw unexpected('set-policy.lua', reply)
  }
}

/**
 * Runs several set-policy.lua of one account in one MULTI (they share the account's slot), so the
 * next call on any instance sees either none or all of them. One reply per write, in order.
 */
/** set-policy.lua's text, read at the first policy write (not at every start-up: loadScripts reads it already). */
let setPolicyLua: string | null = null

export async function runSetPolicies(ctx: RedisContext, accountId: string, now: number, writes: PolicyWrite[]): Promise<SetPolicyReply[]> {
  const { redis, keys } = ctx
  const outbox = keys.outbox(keys.shardOf(accountId))
  // EVAL, not EVALSHA: inside MULTI a NOSCRIPT fails that one command while the others apply. The
  // body is sent each time; a policy write is rare.
  const multi = redis.multi()
  for (const w of writes) {
    const hash = w.agentId === null ? keys.account(accountId) : keys.agent(accountId, w.agentId)
    const parent = w.agentId !== null && w.parentId ? keys.agent(accountId, w.parentId) : hash
    multi.eval((setPolicyLua ??= readScripts().find((x) => x.name === 'setPolicy')!.lua), 3, hash, outbox, parent, now, w.agentId === null ? 'account' : 'agent', accountId, w.agentId ?? '', ...triplets(w.fields))
  }
  const results = await multi.exec()
  if (!results) throw new Error('set-policy: transaction aborted')
  return results.map(([err, reply]) => {
    if (err) throw err
    return decodeSetPolicy(reply as Reply)
  })
}
