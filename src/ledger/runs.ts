/**
 * The run budgets of an account (docs/api.md §13c), as GET /v1/runs and the console list them:
 * read from the runs' own records (debit.lua writes them; refund.lua and settle.lua give back),
 * which stay in Redis RUN_KEPT_S past a run's end, newest opened first.
 * The owner sees every run of the account; an agent the runs opened by itself or its subtree.
 */
import type { Principal } from '../auth/principal'
import type { RedisContext } from '../redis/context'

export interface RunView {
  id: string
  agent_id: string
  max: number
  spent: number
  opened_at: string
  expires_at: string
  state: 'open' | 'ended'
  /** What the run left unspent when it ended (never held from the agent: nothing moves); null while open. */
  released: number | null
}

/** At most this many runs are listed, the newest opened first. */
export const RUNS_LISTED = 200

export async function listRuns(ctx: RedisContext, principal: Pick<Principal, 'accountId' | 'agentId'>): Promise<RunView[]> {
  const { redis, keys } = ctx
  const acct = principal.accountId
  const ids = await redis.zrevrange(keys.runs(acct), 0, RUNS_LISTED - 1)
  if (ids.length === 0) return []
  const pipe = redis.pipeline()
  for (const id of ids) pipe.hmget(keys.run(acct, id), 'agent', 'chain', 'max', 'spent', 'opened', 'expires')
  const rows = (await pipe.exec()) ?? []
  const now = ctx.clock.now()
  const out: RunView[] = []
  rows.forEach(([err, row], i) => {
    if (err) throw err
    const [agent, chain, max, spent, opened, expires] = row as (string | null)[]
    // Its record expired (kept RUN_KEPT_S past its end) while the index still named it.
    if (agent === null || agent === undefined) return
    if (principal.agentId !== null && agent !== principal.agentId && !(chain ?? '').split(',').includes(principal.agentId)) return
    const ended = Number(expires) <= now
    out.push({
      id: ids[i]!,
      agent_id: agent,
      max: Number(max),
      spent: Number(spent),
      opened_at: new Date(Number(opened)).toISOString(),
      expires_at: new Date(Number(expires)).toISOString(),
      state: ended ? 'ended' : 'open',
      released: ended ? Math.max(0, Number(max) - Number(spent)) : null,
    })
  })
  return out
}
