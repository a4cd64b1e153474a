/**
 * Agent tokens over their scripts: create-agent-3 and agent-state-2 write, every read is plain
 * hash reads in the account's slot. The state lives where debit-13 and authorize-4 read it, so a
 * kill, revive or revoke holds from the very next request on every instance.
 * errors: NOT_FOUND (unknown id or another account's), CONFLICT (revived/killed while revoked,
 *         agent limit).
 */
import { hashToken, newToken, randomId } from '../auth/tokens'
import { ApiError } from '../errors'
import type { RedisContext } from '../redis/context'
import { windowsAt } from '../ledger/windows'
import { runAgentState, runCreateAgent } from '../lua/agents'
import { decodeAllowlist } from './allowlist'

/** Every agent ever created stays listed (revoked ones too), so the set is bounded. */
export const MAX_AGENTS = 1000

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
}

export interface NewAgent {
  name: string
  daily_cap: number | null
  /** Already encoded by encodeAllowlist: null = allow everything. */
  allow: string | null
  per_call_max: number | null
}

const FIELDS = ['token', 'name', 'state', 'daily_cap', 'allow', 'per_call_max', 'created', 'kill_reason'] as const

const optNum = (v: string | null) => (v === null ? null : Number(v))

/** The agents of an account (all of them, or the given ids), oldest first; unknown ids skipped. */
export async function readAgents(ctx: RedisContext, acct: string, ids?: string[]): Promise<AgentView[]> {
  const { redis, keys } = ctx
  const day = windowsAt(ctx.clock.now()).day
  const list = ids ?? (await redis.smembers(keys.agents(acct)))
  const rows = await Promise.all(
    list.map(async (id) => {
      const [f, spent] = await Promise.all([redis.hmget(keys.agent(acct, id), ...FIELDS), redis.get(keys.agentSpentToday(acct, id, day))])
      const [token, name, state, dailyCap, allow, perCallMax, created, killReason] = f
      if (!token) return null
      return {
        id,
        name: name ?? '',
        state: (state ?? 'active') as AgentState,
        kill_reason: state === 'killed' ? ((killReason ?? 'operator') as KillReason) : null,
        daily_cap: optNum(dailyCap ?? null),
        allowlist: decodeAllowlist(allow),
        per_call_max: optNum(perCallMax ?? null),
        spent_today: Number(spent ?? 0),
        created_at: new Date(Number(created)).toISOString(),
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

/** Creates an agent and its token (returned once; only the hash is stored). */
export async function createAgent(ctx: RedisContext, acct: string, a: NewAgent): Promise<{ agent: AgentView; token: string }> {
  const { redis, keys } = ctx
  const id = 'agt_' + randomId()
  const token = newToken('agent')
  const tokenHash = hashToken(token)
  // The token mapping first: once the agent is listed, its token already resolves.
  await redis.set(keys.token(tokenHash), `${acct}|${id}`)
  const reply = await runCreateAgent(ctx, {
    now: ctx.clock.now(),
    accountId: acct,
    agentId: id,
    tokenHash,
    name: a.name,
    maxAgents: MAX_AGENTS,
    dailyCap: a.daily_cap ?? null,
    allow: a.allow,
    perCallMax: a.per_call_max ?? null,
  })
  if (reply.status !== 'ok') {
    await redis.del(keys.token(tokenHash))
    if (reply.status === 'limit_reached')
      throw new ApiError('CONFLICT', { reason: `the account already holds ${MAX_AGENTS} agent tokens, the most allowed (revoked ones count)` })
    throw new Error(`create-agent ${id}: ${reply.status}`)
  }
  return { agent: await readAgent(ctx, acct, id), token }
}

export type AgentAction = 'kill' | 'revive' | 'revoke'

/** Where the operator acted, named in the agent.* event: the REST API or the messaging channel. */
export type ActionVia = 'api' | 'chat'

/** Moves an agent; repeating the current state is a no-op that answers the agent as it is. */
export async function changeAgentState(ctx: RedisContext, acct: string, id: string, action: AgentAction, via: ActionVia = 'api'): Promise<AgentView> {
  if (!AGENT_ID.test(id)) throw notFound()
  const reply = await runAgentState(ctx, { now: ctx.clock.now(), accountId: acct, agentId: id, action, via })
  if (reply.status === 'not_found') throw notFound()
  if (reply.status === 'agent_revoked')
    throw new ApiError('CONFLICT', { reason: `agent ${id} is revoked, and revocation is permanent; create a new agent token instead` })
  return readAgent(ctx, acct, id)
}

function notFound(): ApiError {
  return new ApiError('NOT_FOUND', { resource: 'agent' })
}
