/**
 * The depth-4 row's caller: an agent made with the owner token, then each agent makes its child
 * with its own ak_ token (docs/api.md §8: POST /v1/agents {name, budget}), down to depth 4, so that
 * every paid call of the row makes the debit check the agent and each of its ancestors. Budgets
 * are far beyond any run's spend: the row measures the walk up the tree, not a denial.
 */
const BUDGET = 1_000_000_000_000
const DEPTH = 4

export type DeepAgent = { token: string; depth: number; ids: string[] } | { skip: string }

export async function depthAgent(svcUrl: string, ownerToken: string): Promise<DeepAgent> {
  let token = ownerToken
  const ids: string[] = []
  // A child's budget may not exceed its parent's remaining one: each level a little less.
  for (let level = 1; level <= DEPTH + 1; level++) {
    const res = await fetch(`${svcUrl}/v1/agents`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ name: `bench-depth-${level}`, budget: BUDGET - level }),
    })
    const text = await res.text()
    if (res.status !== 201) {
      const who = level === 1 ? 'the owner token' : `the token of the agent at level ${level - 1}`
      return { skip: `the service does not support sub-agents yet: POST /v1/agents {name, budget} with ${who} answered ${res.status} ${text.slice(0, 160)}` }
    }
    const a = JSON.parse(text) as { id?: string; token?: string; depth?: number }
    if (!a.token || typeof a.depth !== 'number') return { skip: `POST /v1/agents answered no token or depth: ${text.slice(0, 160)}` }
    token = a.token
    ids.push(a.id ?? '?')
    if (a.depth >= DEPTH) return { token, depth: a.depth, ids }
  }
  return { skip: `no agent reached depth ${DEPTH} in ${DEPTH + 1} levels` }
}
