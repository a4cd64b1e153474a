/**
 * Status codes returned as the first element of every script's tuple. One table for all scripts,
 * mirrored by the `local S_*` constants at the top of each Lua file.
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
}
