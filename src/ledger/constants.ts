/** Ledger rules shared by the services over the scripts: key lifetimes and the fixed grants. */

/** Day-windowed keys live two days: long enough for a refund that crosses midnight. */
export const DAY_KEY_TTL_S = 2 * 86400

/**
 * A call record outlives its filing only this long (record-calls.lua). Once a call is recorded no
 * refund can apply to it, so the record only guards against a resent script, which ioredis sends
 * within seconds of a lost reply (src/redis/client.ts). Without this, every call ever made would
 * hold a Redis key for two days: about 1.7 billion keys at a sustained 10,000 calls a second.
 */
export const SETTLED_CALL_TTL_S = 300

/** Charge records dedupe webhook replays; Stripe retries a delivery for up to 3 days. */
export const CHARGE_TTL_S = 90 * 86400

export const SIGNUP_CREDITS = 500
export const REFERRAL_CREDITS = 500
/** How many recent calls Redis keeps per account for /v1/activity; older ones come from Postgres. */
export const RECENT_CALLS = 200
