/**
 * The one reader of an account hash ({s}:acct:<acct>) in TypeScript: its field names, and how each
 * decodes. The scripts write it (create-account.lua, set-policy.lua, set-mandate.lua, debit.lua, …);
 * everything else reads it through readAccount, so a renamed or re-typed field changes one table.
 * A field the hash does not hold reads null (no account, or no such setting): callers pick the
 * default, since the default is theirs to know (config, '' for a link).
 */
import type { RedisContext } from './context'

const num = (v: string | null) => (v === null ? null : Number(v))
const str = (v: string | null) => v

const FIELDS = {
  /** SHA-256 of the current owner token. */
  owner: str,
  /** What the account can spend now (every limit weighs it). */
  balance: num,
  /** What its metered calls in flight have reserved (debit.lua holds, settle.lua and refund.lua
   * release); absent = 0. The ledger's entries sum to balance + held, the posted balance. */
  held: num,
  email: str,
  public_ref: str,
  origin: str,
  /** The referrer while the referral bonus is still owed. */
  referrer: str,
  /** Own daily cap; absent = the deployment's default. */
  daily_cap: num,
  /** Allowlist patterns joined by "\n"; absent = everything. */
  allow: str,
  balance_cap: num,
  /** Warning levels of the caps, percentages ascending joined by ','; absent = the default, '' = off (docs/api.md §13a). */
  thresholds: str,
  /** The saved-card consent page's ref (/mandate?ref=). */
  mref: str,
  /** The enabled mandate's threshold, present only while auto-refill is on. */
  refill_below: num,
  policy_v: num,
  /** Standing temporary raises of the policy fields, JSON (lua/lib/raises.lua, docs/api.md §13b). */
  raises: str,
  /** Micro-credits of metered usage not yet charged, 0 ≤ r < 1e6 (settle.lua, docs/api.md §7). */
  mc_rem: num,
  /** Hundredths of a micro-credit an owner's-lane fee left beside mc_rem, 0..99 (settle.lua, docs/metering.md). */
  mc_rem_c: num,
  created: num,
  /** When the last e-mail recovery replaced the owner token: links issued before it are void (rotate-owner.lua). */
  rec: num,
} as const

export type AccountField = keyof typeof FIELDS
export type AccountValues<F extends AccountField> = { [K in F]: ReturnType<(typeof FIELDS)[K]> }

export async function readAccount<F extends AccountField>(ctx: Pick<RedisContext, 'redis' | 'keys'>, accountId: string, ...fields: F[]): Promise<AccountValues<F>> {
  const raw = await ctx.redis.hmget(ctx.keys.account(accountId), ...fields)
  return Object.fromEntries(fields.map((f, i) => [f, FIELDS[f](raw[i] ?? null)])) as AccountValues<F>
}
