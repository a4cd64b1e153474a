/**
 * The one reader of an account hash ({s}:acct:<acct>) in TypeScript: its field names, and how each
 * decodes. The scripts write it (create-account-3, set-policy-3, set-mandate-3, debit-15, …);
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
  /** What its metered calls in flight have reserved (debit-15 holds, settle-n and refund-11
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
  /** The saved-card consent page's ref (/mandate?ref=). */
  mref: str,
  /** The enabled mandate's threshold, present only while auto-refill is on. */
  refill_below: num,
  policy_v: num,
  /** Micro-credits of metered usage not yet charged, 0 ≤ r < 1e6 (settle-n, docs/api.md §7). */
  mc_rem: num,
  /** Hundredths of a micro-credit an owner's-lane fee left beside mc_rem, 0..99 (settle-n, docs/metering.md). */
  mc_rem_c: num,
  created: num,
  /** When the last e-mail recovery replaced the owner token: links issued before it are void (rotate-owner-2). */
  rec: num,
} as const

export type AccountField = keyof typeof FIELDS
export type AccountValues<F extends AccountField> = { [K in F]: ReturnType<(typeof FIELDS)[K]> }

export async function readAccount<F extends AccountField>(ctx: Pick<RedisContext, 'redis' | 'keys'>, accountId: string, ...fields: F[]): Promise<AccountValues<F>> {
  const raw = await ctx.redis.hmget(ctx.keys.account(accountId), ...fields)
  return Object.fromEntries(fields.map((f, i) => [f, FIELDS[f](raw[i] ?? null)])) as AccountValues<F>
}
