/**
 * Status codes returned as the first element of every script's tuple. One table for all scripts,
 * given to every Lua file as generated locals (`--@include status`, see scripts.ts statusInclude).
 */
export enum ScriptStatus {
  OK = 0,
  REPLAY = 1,
  UNAUTHORIZED = 2,
  AGENT_KILLED = 3,
  AGENT_REVOKED = 4,
  RATE_LIMITED = 5,
  DENIED_AGENT_ALLOWLIST = 6,
  DENIED_ACCOUNT_ALLOWLIST = 7,
  DENIED_PER_CALL_MAX = 8,
  DENIED_AGENT_DAILY_CAP = 9,
  DAILY_CAP_REACHED = 10,
  REQUEST_CAP_REACHED = 11,
  INSUFFICIENT_BALANCE = 12,
  IDEMPOTENCY_MISMATCH = 13,
  IDEMPOTENCY_IN_FLIGHT = 14,
  ALREADY_APPLIED = 15,
  NOT_FOUND = 16,
  BALANCE_CAP = 17,
  LINK_INVALID = 18,
  LINK_USED = 19,
  /** Governance: a per-account limit (e.g. agent tokens) is reached. */
  LIMIT_REACHED = 20,
  /** The signup alarm refused this signup (signups are paused). */
  SIGNUPS_PAUSED = 21,
  /** The sweeper's refund found the call's lease renewed: it is still being served. */
  NOT_DUE = 22,

  // Money in (mandate, refills, top-ups, parked payments): a block of its own from 40, so that
  // codes added above in parallel never collide with these.
  /** No enabled mandate with a saved card. */
  NO_MANDATE = 40,
  /** Enabling needs the saved-card consent flow first. */
  CONSENT_REQUIRED = 41,
  /** Another refill of this account is in flight (the refill lock). */
  REFILL_IN_FLIGHT = 42,
  /** The balance is not below the threshold (or the amount is zero): nothing to do. */
  REFILL_NOT_NEEDED = 43,
  /** Auto-refill waits after a declined charge. */
  REFILL_BACKOFF = 44,
  /** The explicit top-up of this HKT day already ran. */
  TOPUP_TODAY = 45,
  /** The month's auto-refill ceiling would be passed. */
  CEILING_REACHED = 46,
  /** A paid charge would pass the balance cap: parked for founder review. */
  PARKED = 47,
  /** A parked payment (or a proposal) is not in the state the decision needs. */
  WRONG_STATE = 48,
  /** A consent from a session that is not the one the owner started last, or started before a forget. */
  CONSENT_STALE = 49,
  /** A refund or dispute of a charge that was not credited here (parked, or not ours): nothing to take back. */
  NOT_CREDITED = 50,
  /** A reversed charge was credited, but its credits are not known yet (its top-up entry is not in Postgres yet). */
  CREDITS_UNKNOWN = 51,
  /**
   * A refund or dispute of a charge not credited yet (its credit event is still to come, or it is
   * parked): recorded, and the credit (or the founder's approval) credits only what was not reversed.
   */
  RECORDED = 52,

  // Proposals (an agent asks its operator): from 60.
  /** An approval of this proposal is being applied (its top-up is at the card processor). */
  APPLYING = 60,

  // Agent budgets and sub-agents (docs/api.md §8): from 80.
  /** The caller's or an ancestor's lifetime budget would be passed (POLICY_DENIED agent_budget). */
  DENIED_AGENT_BUDGET = 80,
  /** A sub-agent's limits would be wider than its parent's (POLICY_DENIED exceeds_parent). */
  DENIED_EXCEEDS_PARENT = 81,
  /** A sub-agent would be deeper than the tree allows (POLICY_DENIED max_depth). */
  DENIED_MAX_DEPTH = 82,
  /** create-agent: the account's live-agent set is not kept yet (agents older than it): recount, then retry. */
  RECOUNT_AGENTS = 83,
  /** recount-agents: the account's agents changed between listing and counting: list them again. */
  AGENTS_CHANGED = 84,
  /** create-agent: an agent past its expiry is still in the live-agent set: release-expired.lua, then retry. */
  RELEASE_EXPIRED = 85,

  // Run budgets (docs/api.md §13c): from 120.
  /** A run named by the call would be passed, has ended, or is another agent's (POLICY_DENIED run_budget). */
  DENIED_RUN_BUDGET = 120,

  // OAuth grants for MCP clients (docs/mcp-oauth.md): from 100.
  /** An authorization code or refresh token presented again after its one use: the grant is revoked. */
  GRANT_REUSED = 100,
  /** An authorization code past its 60 s. */
  GRANT_EXPIRED = 101,
  /** A code presented with another client, redirect URI, resource or PKCE verifier than authorized. */
  GRANT_MISMATCH = 102,
  /** A refresh of a grant whose agent is revoked or past its expiry: the grant is deleted. */
  GRANT_AGENT_ENDED = 103,
}
