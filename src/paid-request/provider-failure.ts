/**
 * The answer to a refunded provider failure, the same on both paths: RESPONSE_TOO_LARGE for an
 * answer past the cap, PROVIDER_ERROR for everything else the provider got wrong.
 */
import { ApiError } from '../errors'
import type { DebitedCall, Settlement } from './debited-call'

export function providerFailure(call: DebitedCall, s: Settlement, o: { providerStatus: number | null; cap: number }): ApiError {
  if (s.outcome === 'too_large') return new ApiError('RESPONSE_TOO_LARGE', { cap: o.cap, refunded: s.refunded, call_id: call.callId, balance: s.balance })
  return new ApiError('PROVIDER_ERROR', { refunded: s.refunded, call_id: call.callId, provider_status: o.providerStatus, balance: s.balance })
}
