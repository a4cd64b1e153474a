/** The proposals' dependencies from the service graph: the Redis context, POST /v1/topup's and PUT /v1/policies' services. */
import { putPolicies } from '../governance/policy-views'
import { topup, type MandateDeps } from '../mandate/mandate'
import type { ProposalDeps } from './proposals'

export function proposalDeps(s: MandateDeps): ProposalDeps {
  return {
    ctx: s.ctx,
    topup: (accountId, credits) => topup(s, accountId, credits),
    setBudget: (accountId, agentId, budget) => putPolicies(s.ctx, accountId, { agents: { [agentId]: { budget } } }),
  }
}
