/** The proposals' dependencies from the service graph: the Redis context, POST /v1/topup's and PUT /v1/policies' services. */
import { putPolicies } from '../governance/policy-views'
import { topup } from '../mandate/mandate'
import type { Services } from '../services'
import type { ProposalDeps } from './proposals'

export function proposalDeps(s: Services): ProposalDeps {
  return {
    ctx: s.ctx,
    topup: (accountId, credits) => topup(s, accountId, credits),
    setBudget: (accountId, agentId, budget) => putPolicies(s.ctx, accountId, { agents: { [agentId]: { budget } } }),
  }
}
