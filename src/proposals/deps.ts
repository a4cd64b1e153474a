/** The proposals' dependencies from the service graph: the Redis context and POST /v1/topup's service. */
import { topup } from '../mandate/mandate'
import type { Services } from '../services'
import type { ProposalDeps } from './proposals'

export function proposalDeps(s: Services): ProposalDeps {
  return { ctx: s.ctx, topup: (accountId, credits) => topup(s, accountId, credits) }
}
