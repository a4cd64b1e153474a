/**
 * Agent tokens over their scripts: create-agent.lua and agent-state.lua write, every read is plain
 * hash reads in the account's slot. The state lives where debit.lua and authorize.lua read it, so a
 * kill, revive or revoke holds from the very next request on every instance.
 * errors: NOT_FOUND (unknown id or another account's), CONFLICT (revived/killed while revoked,
 *         agent limit).
 */
import { hashToken, newToken, randomId } from '../auth/tokens'
import { ApiError } from '../errors'
import type { RedisContext } from '../redis/context'
import { windowsAt } from '../windows'
import { runAgentState, runCreateAgent, runRecountAgents, type CreateAgentArgs } from '../lua/agents'
import { decodeAllowlist } from './allowlist'
import { applyRaises, type RaisedView } from './raises'
import { denial } from '../lua/denials'

/**
 * The most live agents one account may hold: revoked ones (and their subtrees) and expired ones do
 * not count, so revoking frees their places (lua/lib/live-agents.lua); killed ones count, since
 * the operator may revive them. Every agent stays listed, revoked ones too.
 */
export const MAX_AGENTS = 1000

/**
 * The deepest a sub-agent may sit (docs/api.md §8): the operator's agents are depth 1. It bounds the
 * chain the debit walks to 3 ancestors, which it takes through fixed KEYS slots.
 */
export const MAX_DEPTH = 4

export const AGENT_ID = /^agt_[A-Za-z0-9_-]{22}$/

export type AgentState = 'active' | 'killed' | 'revoked'
export type KillReason = 'operator' | 'breaker'

export interface AgentView {
  id: string
  name: string
  state: AgentState
  /** Why a killed agent is killed: `operator` (by hand) or `breaker` (runaway spend); null otherwise. */
  kill_reason: KillReason | null
  daily_cap: number | null
  allowlist: string[] | null
  per_call_max: number | null
  spent_today: number
  created_at: string
  /** The agent that created this sub-agent; null for the operator's own agents (docs/api.md §8). */
  parent_id: string | null
  /** 1 for the operator's agents, the parent's + 1 for a sub-agent (at most MAX_DEPTH). */
  depth: number
  /** Lifetime credits; null = none. */
  budget: number | null
  /** Credits spent over the agent's life by it and its whole subtree, refunds given back. */
  spent_total: number
  expires_at: string | null
  /** The OAuth client whose consent created this agent (its name, docs/mcp-oauth.md); null otherwise. */
  oauth_client: string | null
  /** Standing temporary raises (docs/api.md §13b); absent when none. */
  raised?: RaisedView
}

export interface NewAgent {
  name: string
  daily_cap: number | null
  /** Already encoded by encodeAllowlist: null = allow everything. */
  allow: string | null
  per_call_max: number | null
  budget?: number | null
  /** Seconds to live (a sub-agent's; clamped to its parent's expiry). */
  ttl_s?: number | null
  /** The creating agent's id and its chain: the new agent is its child. Absent: the operator's. */
  parent?: { id: string; chain: readonly string[] }
}

const FIELDS = ['token', 'name', 'state', 'daily_cap', 'allow', 'per_call_max', 'created', 'kill_reason', 'parent', 'depth', 'budget', 'spent_total', 'expires', 'chain', 'day', 'day_spent', 'oauth_client', 'raises'] as const

/** The token → principal mapping, chain included: it never changes, so it is cached with the token. */
export const tokenMapping = (acct: string, id: string, chain: readonly string[]) => `${acct}|${id}|${chain.join(',')}`

/** An agent as listed, with its chain (ancestor ids, parent first) for subtree filtering. */
export type AgentRow = AgentView & { chain: string[] }

const optNum = (v: string | null) => (v === null ? null : Number(v))

/** The agents of an account (all of them, or the given ids), oldest first; unknown ids skipped. */
export async function readAgents(ctx: RedisContext, acct: string, ids?: string[]): Promise<AgentView[]> {
  return (await readAgentRows(ctx, acct, ids)).map(({ chain: _c, ...view }) => view)
}

/** The descendants of one agent (its subtree without itself), oldest first. */
export async function readSubtree(ctx: RedisContext, acct: string, rootId: string): Promise<AgentView[]> {
  return (await readAgentRows(ctx, acct)).filter((a) => a.chain.includes(rootId)).map(({ chain: _c, ...view }) => view)
}

/** The agents an agent reaches (docs/api.md §8): itself and its descendants, by their chains. */
export async function subtreeOf(ctx: RedisContext, acct: string, agentId: string): Promise<Set<string>> {
  const rows = await readAgentRows(ctx, acct)
  return new Set([agentId, ...rows.filter((a) => a.chain.includes(agentId)).map((a) => a.id)])
}

export async function readAgentRows(ctx: RedisContext, acct: string, ids?: string[]): Promise<AgentRow[]> {
  const { redis, keys } = ctx
  const day = windowsAt(ctx.clock.now()).day
  const list = ids ?? (await redis.smembers(keys.agents(acct)))
  const rows = await Promise.all(
    list.map(async (id) => {
      const f = await redis.hmget(keys.agent(acct, id), ...FIELDS)
      const [token, name, state, storedCap, storedAllow, perCallMax, created, killReason, parent, depth, storedBudget, spentTotal, expires, chain, spentDay, daySpent, oauthClient, raises] = f
      if (!token) return null
      const { fields, raised } = applyRaises(raises, ctx.clock.now(), { daily_cap: storedCap, allow: storedAllow, budget: storedBudget })
      const { daily_cap: dailyCap, allow, budget } = fields
      return {
        id,
        name: name ?? '',
        state: (state ?? 'active') as AgentState,
        kill_reason: state === 'killed' ? ((killReason ?? 'operator') as KillReason) : null,
        daily_cap: optNum(dailyCap ?? null),
        allowlist: decodeAllowlist(allow),
        per_call_max: optNum(perCallMax ?? null),
        // The hash's day spend is today's only while its `day` is today (debit.lua moves it on).
        spent_today: spentDay === String(day) ? Number(daySpent ?? 0) : 0,
        created_at: new Date(Number(created)).toISOString(),
        parent_id: parent ?? null,
        depth: Number(depth ?? 1),
        budget: optNum(budget ?? null),
        spent_total: Number(spentTotal ?? 0),
        expires_at: expires ? new Date(Number(expires)).toISOString() : null,
        oauth_client: oauthClient ?? null,
        ...(raised ? { raised } : {}),
        chain: chain ? chain.split(',') : [],
        created: Number(created),
      }
    }),
  )
  return rows
    .filter((r) => r !== null)
    .sort((a, b) => a.created - b.created || a.id.localeCompare(b.id))
    .map(({ created: _c, ...view }) => view)
}

export async function readAgent(ctx: RedisContext, acct: string, id: string): Promise<AgentView> {
  const [agent] = AGENT_ID.test(id) ? await readAgents(ctx, acct, [id]) : []
  if (!agent) throw notFound()
  return agent
}

/** One agent as an agent sees it: only its own descendants exist for it (else NOT_FOUND). */
export async function readDescendant(ctx: RedisContext, acct: string, actorId: string, id: string): Promise<AgentView> {
  const [row] = AGENT_ID.test(id) ? await readAgentRows(ctx, acct, [id]) : []
  if (!row || !row.chain.includes(actorId)) throw notFound()
  const { chain: _c, ...view } = row
  return view
}

/** Creates an agent and its token (returned once; only the hash is stored). */
export async function createAgent(ctx: RedisContext, acct: string, a: NewAgent): Promise<{ agent: AgentView; token: string }> {
  const { redis, keys } = ctx
  const id = 'agt_' + randomId()
  const token = newToken('agent')
  const tokenHash = hashToken(token)
  const chain = a.parent ? [a.parent.id, ...a.parent.chain] : []
  // The token mapping first: once the agent is listed, its token already resolves.
  await redis.set(keys.token(tokenHash), tokenMapping(acct, id, chain))
  const args: CreateAgentArgs = {
    now: ctx.clock.now(),
    accountId: acct,
    agentId: id,
    tokenHash,
    name: a.name,
    maxAgents: MAX_AGENTS,
    dailyCap: a.daily_cap ?? null,
    allow: a.allow,
    perCallMax: a.per_call_max ?? null,
    chain,
    budget: a.budget ?? null,
    ttlMs: a.ttl_s === undefined || a.ttl_s === null ? null : a.ttl_s * 1000,
    maxDepth: MAX_DEPTH,
    via: 'api',
  }
  let reply = await runCreateAgent(ctx, args)
  // Agents older than the account's live-agent set: the script counts them once, then the create runs again.
  if (reply.status === 'recount') {
    await runRecountAgents(ctx, acct, { now: args.now, replace: false })
    reply = await runCreateAgent(ctx, args)
  }
  if (reply.status !== 'ok') {
    await redis.del(keys.token(tokenHash))
    throw createRefused(reply, a.parent?.id ?? null)
  }
  return { agent: await readAgent(ctx, acct, id), token }
}

function createRefused(reply: Exclude<Awaited<ReturnType<typeof runCreateAgent>>, { status: 'ok' }>, parentId: string | null): Error {
  const policy = (rule: string, extra: Record<string, unknown>) =>
    new ApiError('POLICY_DENIED', { rule, raised_by: 'operator', raise_via: 'PUT /v1/policies', ...extra })
  switch (reply.status) {
    case 'limit_reached':
      return new ApiError('CONFLICT', { reason: `the account already holds ${MAX_AGENTS} live agent tokens, the most allowed; revoke some (a revoke frees its whole subtree) to make room` })
    case 'max_depth':
      return policy('max_depth', { max_depth: reply.max })
    case 'exceeds_parent':
      return policy('exceeds_parent', { field: reply.field, limit: reply.field === 'allowlist' ? reply.limit : Number(reply.limit), parent_id: parentId })
    case 'not_found':
      return notFound()
    case 'already_applied':
      return new Error(`create-agent: the new id exists`)
    case 'recount':
      return new Error(`create-agent: the account's live agents were counted, yet the script asked for a recount again`)
    default:
      return denial(reply, { agentId: parentId, resetsAt: '' })
  }
}

export type AgentAction = 'kill' | 'revive' | 'revoke'

/** Where the operator acted, named in the agent.* event: the REST API or the messaging channel. */
export type ActionVia = 'api' | 'chat'

/**
 * Moves an agent; repeating the current state is a no-op that answers the agent as it is. An
 * acting agent (`actorId`) reaches only its descendants (the script checks the chain): anything
 * else is NOT_FOUND.
 */
export async function changeAgentState(ctx: RedisContext, acct: string, id: string, action: AgentAction, via: ActionVia = 'api', actorId: string | null = null): Promise<AgentView> {
  if (!AGENT_ID.test(id)) throw notFound()
  // The parent never changes, so reading it first decides nothing: the script checks the rest.
  const parentId = await ctx.redis.hget(ctx.keys.agent(acct, id), 'parent')
  const reply = await runAgentState(ctx, { now: ctx.clock.now(), accountId: acct, agentId: id, action, via, parentId, actorId })
  if (reply.status === 'not_found') throw notFound()
  if (reply.status === 'agent_revoked')
    throw new ApiError('CONFLICT', { reason: `agent ${id} is revoked, and revocation is permanent; create a new agent token instead` })
  return readAgent(ctx, acct, id)
}

export function notFound(): ApiError {
  return new ApiError('NOT_FOUND', { resource: 'agent' })
}
