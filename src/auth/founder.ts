/**
 * Admission to the founder surfaces (/admin/*): `Authorization: Bearer $ADMIN_TOKEN`, compared in
 * constant time. A valid owner or agent token is FORBIDDEN there (it is known, just not allowed),
 * after its admission (counted in its rate window; a killed agent hears AGENT_KILLED as elsewhere);
 * anything else is UNAUTHORIZED and counts against the client IP's rate limit, so guessing the
 * founder token is throttled like any unauthenticated request.
 * errors: NOT_CONFIGURED (no ADMIN_TOKEN), FORBIDDEN, UNAUTHORIZED, RATE_LIMITED.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { notConfigured } from '../alarms/not-configured'
import { ApiError } from '../errors'
import type { Guard } from './guard'

// Hashing first gives both sides one length, so the comparison leaks neither content nor length.
const digest = (s: string) => createHash('sha256').update(s).digest()

export function isFounderToken(bearer: string, adminToken: string): boolean {
  return timingSafeEqual(digest(bearer), digest(adminToken))
}

export async function admitFounder(adminToken: string | undefined, guard: Guard, bearer: string | undefined, ip: string): Promise<void> {
  if (!adminToken) throw notConfigured('admin')
  if (bearer && isFounderToken(bearer, adminToken)) return
  if (bearer && (await guard.tokens.resolve(bearer))) {
    // Counted in the token's rate window first, as on every route (an operator-only route refuses
    // an agent token the same way): without it a valid token could call /admin/* without any limit.
    await guard.admit(bearer, ip)
    throw new ApiError('FORBIDDEN', { role: 'founder (service owner)' })
  }
  await guard.admitAnonymous(ip)
  throw new ApiError('UNAUTHORIZED')
}
