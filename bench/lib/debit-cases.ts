/**
 * The debits bench/script-cost.ts and bench/lua-lines.ts measure: an account's owner, and a chain of
 * four agents (depth 1 to 4) as create-agent.lua leaves them, budgets far beyond any run. The tree's
 * own modules come as arguments: script-cost.ts runs the same cases on a baseline checkout's.
 */
type Hash = (token: string) => string
interface CaseKeys {
  account(acct: string): string
  agent(acct: string, agent: string | null): string
}
type RedisLike = { hset(key: string, fields: Record<string, string | number>): Promise<unknown> }

export type Who = 'owner' | 'depth-1' | 'depth-4'
export const CHAIN = ['agt_c1', 'agt_c2', 'agt_c3', 'agt_c4'] as const

/**
 * The account (funded far beyond any run) and its depth-4 chain. `layout`: the field the tree's
 * create-account.lua and create-agent.lua write to keep the hashes hashtables
 * (src/redis/hash-layout.ts), none in a tree before it.
 */
export async function seedAccount(redis: RedisLike, keys: CaseKeys, hashToken: Hash, acct: string, layout: Record<string, string> = {}): Promise<void> {
  await redis.hset(keys.account(acct), { ...layout, owner: hashToken('owner'), balance: 1e12 })
  for (const [i, id] of CHAIN.entries()) {
    const h: Record<string, string | number> = { ...layout, token: hashToken(id), name: id, created: 1, v: 1, state: 'active', spent_total: 0, depth: i + 1, budget: 1e9 - i }
    if (i > 0) Object.assign(h, { parent: CHAIN[i - 1]!, chain: CHAIN.slice(0, i).reverse().join(',') })
    if (i < 3) h.carved = 1e9 - i - 1
    await redis.hset(keys.agent(acct, id), h)
  }
}

/**
 * A maker of one debit's arguments (src/lua/debit.ts DebitArgs) for `who`, each with a new call id:
 * price 5, limits and caps far beyond any run, the breaker's identical-request rule on (its
 * fingerprint the same for every call) and its credits rule off. `metered`: a model's request.
 */
export function debitCases(o: { hashToken: Hash; acct: string; now: number; windows: { day: number; rate: number; prevRate: number }; idPrefix: string }) {
  let seq = 0
  return (who: Who, metered = false, accountId = o.acct) => {
    const agent = who === 'owner' ? null : who === 'depth-1' ? 0 : 3
    return {
      now: o.now, accountId, agentId: agent === null ? null : CHAIN[agent], chain: agent === null ? [] : CHAIN.slice(0, agent).reverse(),
      tokenHash: o.hashToken(agent === null ? 'owner' : CHAIN[agent]), target: metered ? 'proxy:llm/m1' : 'bench.search', price: 5, unpriced: false,
      callId: `${o.idPrefix}${++seq}`, day: o.windows.day, rateWindow: o.windows.rate, prevRateWindow: o.windows.prevRate, rateLimit: 1e9, defaultDailyCap: 1e12,
      unpricedRequestCap: 1e9, fingerprint: 'fp', dayKeyTtlS: 172_800, breakerCreditsPerMinute: 0, breakerIdenticalPerMinute: 1e9,
      lowBalanceAlert: 0, abandonAt: o.now + 60_000,
      ...(metered ? { metered: { model: 'm1', inputBound: 120, input: 1000, cachedInput: 100, output: 4000, ceiling: 256, maxOutput: 4096, minOutput: 16 } } : {}),
    }
  }
}
