/**
 * Founder operations: pause and resume a capability (shared pause set, mirrored by every
 * instance's PauseWatcher), reopen signups after the trial-abuse alarm, set an account's balance
 * cap (set-policy.lua, so the change is in the outbox too).
 * errors: UNKNOWN_API (slug), NOT_FOUND (account).
 */
import { resumeSignups, signupsPaused } from '../../alarms/signups'
import { ApiError } from '../../errors'
import { applyPolicyChange, readAccountPolicy } from '../../governance/policies'
import { isAccountId } from '../../redis/keys'
import type { Services } from '../../services'
import { readAccount } from '../../redis/account-hash'

export async function setPaused(s: Services, slug: string, paused: boolean) {
  const cap = s.catalog.capabilities.get(slug)
  if (!cap) throw new ApiError('UNKNOWN_API', { slug, search_url: `/v1/search?q=${encodeURIComponent(slug)}` })
  await (paused ? s.pauses.pause(slug) : s.pauses.resume(slug))
  return { slug, status: s.catalog.state(cap) }
}

export async function reopenSignups(s: Services) {
  await resumeSignups(s.ctx)
  return { signups: (await signupsPaused(s.ctx)) ? ('paused' as const) : ('open' as const) }
}

export async function setBalanceCap(s: Services, accountId: string, balanceCap: number) {
  if (!isAccountId(accountId)) throw new ApiError('NOT_FOUND', { resource: 'account' })
  await applyPolicyChange(s.ctx, accountId, { account: { balance_cap: balanceCap } })
  const [policy, balance] = await Promise.all([readAccountPolicy(s.ctx, accountId), readAccount(s.ctx, accountId, 'balance')])
  return { account_id: accountId, balance_cap: policy.balance_cap, balance: balance.balance ?? 0 }
}
