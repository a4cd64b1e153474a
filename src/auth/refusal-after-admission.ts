/**
 * A paid request's refusals before its debit are answered after the admission the debit would have
 * made (docs/api.md §6: every request counts): the edge's own refusals before a handler are
 * src/admission.ts's.
 * errors: whatever the checks throw, or the admission's refusal (AGENT_KILLED, RATE_LIMITED, ...).
 */
import { ApiError } from '../errors'
import type { Guard } from './guard'
import type { Principal } from './principal'

/**
 * The checks a paid request's handler makes before its debit (the debit script is where such a
 * request is counted and its agent's state checked): a refusal there is answered after the
 * admission the debit would have made, so that it counts against the token's rate limit, and a
 * killed agent or a spent limit is what the caller hears (docs/api.md §6: every request counts).
 */
export async function refusalAfterAdmission<T>(s: { guard: Guard }, principal: Principal, checks: () => T | Promise<T>): Promise<T> {
  try {
    return await checks()
  } catch (e) {
    if (e instanceof ApiError) await s.guard.admitPrincipal(principal)
    throw e
  }
}
