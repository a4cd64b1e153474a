/**
 * Who is calling. A bearer resolves through the global `tok:<sha256>` key to its account and agent.
 * The mapping never changes for a given token, so it is cached in-process; whether the token is
 * still valid (rotated, agent revoked or killed) is decided in the account's slot by the script
 * that admits the request (authorize.lua or debit.lua), on every request and on every instance.
 */
import { ApiError } from '../errors'
import type { RedisContext } from '../redis/context'
import { hashToken, TOKEN_RE } from './tokens'
import { rememberChain } from '../redis/agent-chain'

export interface Principal {
  accountId: string
  /** null for the owner (operator) token. */
  agentId: string | null
  tokenHash: string
  /**
   * A sub-agent's ancestors, parent first (docs/api.md §8); empty (or absent) for the operator and
   * its own agents. Immutable like the rest of the mapping, so the debit never looks it up.
   */
  chain?: readonly string[]
}

const CACHE_MAX = 100_000

export class TokenResolver {
  private cache = new Map<string, Principal>()
  constructor(
    private ctx: RedisContext,
    /** Called before a bearer is called unknown: throws when Redis may have lost it (ledger/availability.ts). */
    private beforeUnknown: () => Promise<void> = async () => {},
  ) {}

  /** The principal of a bearer, or null when the bearer is malformed or unknown. */
  async resolve(bearer: string | undefined): Promise<Principal | null> {
    if (!bearer || !TOKEN_RE.test(bearer)) return null
    const tokenHash = hashToken(bearer)
    const hit = this.cache.get(tokenHash)
    if (hit) return hit
    const v = await this.ctx.redis.get(this.ctx.keys.token(tokenHash))
    if (!v) {
      await this.beforeUnknown()
      return null
    }
    // `acct|agent|chain` (governance/agents.ts tokenMapping); the owner's is `acct|`.
    const [accountId, agentId, chain] = v.split('|') as [string, string, string | undefined]
    const p: Principal = { accountId, agentId: agentId || null, tokenHash, chain: chain ? chain.split(',') : [] }
    if (p.agentId) rememberChain(this.ctx, accountId, p.agentId, p.chain!)
    if (this.cache.size >= CACHE_MAX) this.cache.delete(this.cache.keys().next().value!)
    this.cache.set(tokenHash, p)
    return p
  }

  /** Drop a mapping this instance knows is gone (its own rotations). */
  forget(tokenHash: string): void {
    this.cache.delete(tokenHash)
  }

  async require(bearer: string | undefined): Promise<Principal> {
    const p = await this.resolve(bearer)
    if (!p) throw new ApiError('UNAUTHORIZED')
    return p
  }
}
