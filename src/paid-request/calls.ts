/**
 * The metadata of finished calls: filed by record-calls.lua into the recent list, the outbox and the
 * public counters, and stored for Idempotency-Key replays; batched per shard (call-filing.ts).
 */
import { CallFiling } from './call-filing'
import type { RedisContext } from '../redis/context'
import type { CallOutcome } from './outcome'
import type { TokenCounts, UsageSource } from '../metering/usage'
import { RECENT_CALLS, SETTLED_CALL_TTL_S } from '../ledger/constants'

/** One activity entry (docs/api.md §5): metadata only, never payloads. */
export interface CallRecord {
  call_id: string
  slug: string
  agent_id: string | null
  charged: number
  refunded: boolean
  /** How the call ended; whether that is refunded is the table's to say (paid-request/outcome.ts). */
  outcome: CallOutcome
  http_status: number | null
  latency_ms: number
  at: string
  /** Metered calls (docs/api.md §7); a flat-priced call's model and tokens read null. */
  model?: string | null
  tokens?: TokenCounts | null
  /** Metered: the credits reserved by the debit, and usage past them left uncharged (credits, rounded up). */
  reserved?: number
  uncharged?: number
  usage_source?: UsageSource | null
  /**
   * Whose provider key the request went out with: the house's (on the operator's provider bill) or
   * the owner's vaulted one. Absent where no key was chosen for it (a sweep). The reconciliation with
   * the provider's bill counts house-lane calls only (docs/api.md §13d).
   */
  lane?: CallLane
}

export type CallLane = 'house' | 'owner'

/**
 * How a call is filed under its debit's target: a metered request is debited as
 * proxy:<provider>/<model> (for the allowlists) and filed under its route, with its model and
 * reservation apart and no usage yet (a settle fills that in). One rule for the settle and the sweeper.
 */
export function filedAs(target: string, metered: { model: string; reserved: number } | null): Pick<CallRecord, 'slug' | 'model' | 'reserved' | 'tokens' | 'usage_source' | 'uncharged'> {
  if (!metered) return { slug: target }
  return { slug: target.replace(/\/.*$/, ''), model: metered.model, reserved: metered.reserved, tokens: null, usage_source: null, uncharged: 0 }
}

export interface RecordOptions {
  idempotencyKey?: string
  /** The answer to store for replays (successful calls only). */
  replay?: string
}

/** One batcher per Redis context (the app's, a test's): the batch is per connection and shard. */
const filings = new WeakMap<RedisContext, CallFiling>()

export async function recordCall(ctx: RedisContext, accountId: string, rec: CallRecord, opt: RecordOptions = {}): Promise<void> {
  const key = opt.idempotencyKey
  let filing = filings.get(ctx)
  if (!filing) filings.set(ctx, (filing = new CallFiling(ctx, { recentCalls: RECENT_CALLS, settledTtlS: SETTLED_CALL_TTL_S })))
  await filing.file({
    accountId,
    callId: rec.call_id,
    agentId: rec.agent_id,
    recordJson: JSON.stringify({ ...rec, account_id: accountId }),
    charged: rec.refunded ? 0 : rec.charged,
    organic: !rec.refunded && rec.outcome === 'ok',
    idempotency: key === undefined ? null : opt.replay !== undefined ? { key, mode: 'store', replay: opt.replay } : { key, mode: 'release' },
  })
}

/**
 * The filing settle.lua does with the settle of a metered call it charges, instead of a record-calls.lua
 * after it: the record but for `charged` and `uncharged`, which only the script knows and appends.
 */
export function settleFiling(accountId: string, rec: Omit<CallRecord, 'charged' | 'uncharged'>) {
  const json = JSON.stringify({ ...rec, account_id: accountId })
  return { recordHead: json.slice(0, -1), organic: !rec.refunded && rec.outcome === 'ok', recentCalls: RECENT_CALLS, settledTtlS: SETTLED_CALL_TTL_S }
}

/** The newest calls Redis still holds for the account, newest first. */
export async function recentCalls(ctx: RedisContext, accountId: string): Promise<CallRecord[]> {
  const rows = await ctx.redis.lrange(ctx.keys.recentCalls(accountId), 0, RECENT_CALLS - 1)
  return rows.map((r) => {
    const { account_id: _omit, ...rec } = JSON.parse(r) as CallRecord & { account_id: string }
    return { model: null, tokens: null, ...rec }
  })
}
