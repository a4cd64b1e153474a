/**
 * Admission of every request that is not a paid call: resolves the bearer, checks in the account's
 * slot that the token is current and its agent active, and counts the request against the rate
 * limit (per token when authenticated, per client IP otherwise) — one script, one round trip.
 * errors: UNAUTHORIZED, AGENT_KILLED, AGENT_REVOKED, RATE_LIMITED, FORBIDDEN (operator surfaces).
 */
import { ApiError } from '../errors'
import type { RedisContext } from '../redis/context'
import { denial } from '../lua/denials'
import { rateHeaders, windowsAt } from '../windows'
import { runAuthorize, runRateLimit } from '../lua/admission'
import { trustedProxies } from '../edge/client-ip'
import type { Principal, TokenResolver } from './principal'

export interface Admitted {
  principal: Principal
  headers: Record<string, string>
}

export class Guard {
  /** TRUSTED_PROXIES: addresses and CIDR blocks (edge/client-ip.ts). */
  private trusted: (address: string) => boolean
  constructor(
    private ctx: RedisContext,
    readonly tokens: TokenResolver,
  ) {
    this.trusted = trustedProxies(ctx.cfg.TRUSTED_PROXIES)
  }

  /** A protected request: valid bearer, active agent, within the token's rate limit. */
  async admit(bearer: string | undefined, ip: string): Promise<Admitted> {
    const principal = await this.tokens.resolve(bearer)
    if (!principal) {
      // An unknown bearer is an unauthenticated request: it counts against the IP's limit.
      await this.admitAnonymous(ip)
      throw new ApiError('UNAUTHORIZED')
    }
    return this.admitPrincipal(principal)
  }

  /** The admission of a caller already resolved from its token: an active agent, within its rate limit. */
  async admitPrincipal(principal: Principal): Promise<Admitted> {
    const { cfg } = this.ctx
    const now = this.ctx.clock.now()
    const w = windowsAt(now)
    const { accountId: acct, agentId } = principal
    const reply = await runAuthorize(this.ctx, {
      now,
      accountId: acct,
      agentId,
      tokenHash: principal.tokenHash,
      rateWindow: w.rate,
      prevRateWindow: w.prevRate,
      rateLimit: cfg.RATE_LIMIT_PER_TOKEN,
      chain: principal.chain,
    })
    if (reply.status !== 'ok') throw denial(reply, { agentId, resetsAt: w.resetsAt })
    return { principal, headers: rateHeaders(cfg.RATE_LIMIT_PER_TOKEN, reply.remaining, reply.toWindowEndMs) }
  }

  /** Operator-only surfaces: the owner token, never an agent token. */
  async admitOperator(bearer: string | undefined, ip: string): Promise<Admitted> {
    const a = await this.admit(bearer, ip)
    if (a.principal.agentId !== null) throw new ApiError('FORBIDDEN', { role: 'account operator (owner token)' })
    return a
  }

  /** A request with no (valid) bearer: counted per client IP. */
  async admitAnonymous(ip: string): Promise<Record<string, string>> {
    const { cfg } = this.ctx
    const now = this.ctx.clock.now()
    const w = windowsAt(now)
    const reply = await runRateLimit(this.ctx, { now, ip, rateWindow: w.rate, prevRateWindow: w.prevRate, limit: cfg.RATE_LIMIT_PER_IP })
    if (reply.status !== 'ok') throw denial(reply, { agentId: null, resetsAt: w.resetsAt })
    return rateHeaders(cfg.RATE_LIMIT_PER_IP, reply.remaining, reply.toWindowEndMs)
  }

  /** Public routes: per token when a valid bearer comes along, else per IP. */
  async admitAny(bearer: string | undefined, ip: string): Promise<Record<string, string>> {
    if (bearer && (await this.tokens.resolve(bearer))) return (await this.admit(bearer, ip)).headers
    return this.admitAnonymous(ip)
  }

  /**
   * The client address for the per-IP limit: the socket's, unless the socket is a configured
   * trusted proxy, then the nearest untrusted address of X-Forwarded-For.
   */
  clientIp(request: Request, socketIp: string | undefined): string {
    const ip = socketIp ?? '127.0.0.1'
    if (!this.trusted(ip)) return ip
    const xff = request.headers.get('x-forwarded-for')
    if (!xff) return ip
    const hops = xff.split(',').map((s) => s.trim()).filter(Boolean).reverse()
    return hops.find((h) => !this.trusted(h)) ?? ip
  }
}
