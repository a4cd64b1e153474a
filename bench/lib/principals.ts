/**
 * The bearer of a bench request, resolved once per token and then remembered: the bench's entry
 * points that bypass the HTTP API (ledger-work.ts, pipeline-floor.ts) leave the per-request token
 * lookup out of what they measure.
 */
import type { Principal } from '../../src/auth/principal'
import type { Services } from '../../src/services'

export function rememberedPrincipals(s: Services): (req: Request) => Promise<Principal | null> {
  const known = new Map<string, Principal>()
  return async (req) => {
    const bearer = req.headers.get('authorization')?.slice('Bearer '.length) ?? ''
    const hit = known.get(bearer)
    if (hit) return hit
    const p = await s.guard.tokens.resolve(bearer)
    if (p) known.set(bearer, p)
    return p
  }
}
