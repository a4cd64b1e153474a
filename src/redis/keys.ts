/**
 * The ONLY place Redis keys are built. Layout and rationale: docs/redis-keys.md.
 *
 * Every key of one account carries the hash tag of the account's shard, `{s:NN}`, so every money
 * script touches one hash slot and runs unchanged on Redis Cluster. The shard (not the account id)
 * is the tag so that the transactional outbox can be one stream per shard: the flusher then reads a
 * fixed, small set of streams instead of one per account. Referred accounts are placed in their
 * referrer's shard, which lets the referral bonus credit both sides in one script.
 */
export const SHARDS = 16

export type Shard = number

const DIGIT_0 = 48

/**
 * Account ids embed their shard: `acc_07_<random>`. Read by character codes: a paid request builds
 * a dozen keys, and a regex per key showed up in the proxy's profile.
 */
export function shardOfAccount(accountId: string): Shard {
  const tens = accountId.charCodeAt(4) - DIGIT_0
  const ones = accountId.charCodeAt(5) - DIGIT_0
  if (!accountId.startsWith('acc_') || accountId.charCodeAt(6) !== 95 /* _ */ || !(tens >= 0 && tens <= 9 && ones >= 0 && ones <= 9))
    throw new Error(`not an account id: ${accountId}`)
  return tens * 10 + ones
}

/**
 * For ids that arrive from outside (a founder's URL, a processor's metadata): true only for an
 * account id whose shard exists, so a forged `acc_99_…` is refused as unknown instead of failing
 * as a 500 when its keys are built.
 */
export function isAccountId(id: string): boolean {
  const m = /^acc_(\d{2})_[A-Za-z0-9_-]{1,64}$/.exec(id)
  return !!m && Number(m[1]) < SHARDS
}

const OWNER = '_owner'

export class Keys {
  /** The SHARDS tags, built once. */
  private readonly tags: string[]

  constructor(readonly prefix: string) {
    this.tags = Array.from({ length: SHARDS }, (_, s) => `${prefix}:{s:${String(s).padStart(2, '0')}}`)
  }

  private tag(shard: Shard): string {
    const t = this.tags[shard]
    if (t === undefined) throw new Error(`no shard ${shard}`)
    return t
  }

  shardOf(acct: string): Shard {
    return shardOfAccount(acct)
  }

  private acctTag(acct: string): string {
    return this.tag(shardOfAccount(acct))
  }

  // ---- deployment-wide ----
  /** The generated key of the house lane's end-user ids (END_USER_ID_SECRET unset; docs/house-lane.md). */
  endUserSecret(): string {
    return `${this.prefix}:end-user-secret`
  }

  // ---- per account (one slot) ----
  account(acct: string): string {
    return `${this.acctTag(acct)}:acct:${acct}`
  }
  /** The agent's state and policy; for the owner a key that is never written. */
  agent(acct: string, agentId: string | null): string {
    return `${this.acctTag(acct)}:agent:${acct}:${agentId ?? OWNER}`
  }
  /** Set of the account's agent ids (listing without SCAN). */
  agents(acct: string): string {
    return `${this.acctTag(acct)}:agents:${acct}`
  }
  /**
   * The account's live agents (not revoked, no revoked ancestor), what the agent limit counts: a
   * sorted set of lineages (`<agent>,<chain>`) scored by expiry, plus the `_` marker (see
   * lua/create-agent.lua).
   */
  liveAgents(acct: string): string {
    return `${this.acctTag(acct)}:live-agents:${acct}`
  }
  spentToday(acct: string, day: number): string {
    return `${this.acctTag(acct)}:spent:${acct}:${day}`
  }
  /** Referral bonuses a referrer earned on one HKT day (REFERRAL_BONUS_PER_DAY); in its shard, which its referred accounts share. */
  referralBonusesToday(referrer: string, day: number): string {
    return `${this.acctTag(referrer)}:refbonus:${referrer}:${day}`
  }
  unpricedRequestsToday(acct: string, day: number): string {
    return `${this.acctTag(acct)}:reqs:${acct}:${day}`
  }
  /** Sliding-window rate counter of one token for one minute window. */
  rateWindow(acct: string, agentId: string | null, window: number): string {
    return `${this.acctTag(acct)}:rl:${acct}:${agentId ?? OWNER}:${window}`
  }
  /**
   * The runaway-agent breaker's window of one agent for one minute: a hash of `credits` spent and
   * `f:<fingerprint>` counts of identical requests (debit.lua reads this minute's and the previous).
   */
  breakerWindow(acct: string, agentId: string | null, window: number): string {
    return `${this.acctTag(acct)}:brk:${acct}:${agentId ?? OWNER}:${window}`
  }
  /** What a refund must reverse: price, agent, day. Lives 2 days. */
  call(acct: string, callId: string): string {
    return `${this.acctTag(acct)}:call:${callId}`
  }
  /**
   * An Idempotency-Key's record, scoped to the token that sent it (the agent, or the owner): one
   * agent's key never replays another's answer.
   */
  idempotency(acct: string, agentId: string | null, key: string | null): string {
    return `${this.acctTag(acct)}:idem:${acct}:${agentId ?? OWNER}:${key ?? ''}`
  }
  /**
   * A provider object (a stored response, a stored chat completion) the account created on the
   * house lane: only its creator's requests may name it (docs/house-objects.md). Lives 30 days.
   */
  ownedObject(acct: string, provider: string, objectId: string): string {
    return `${this.acctTag(acct)}:owned:${acct}:${provider}:${objectId}`
  }
  /**
   * A run budget (docs/api.md §13c): a ceiling over the calls that carry its id, opened by the
   * first of them; kept a while past its end so that it can still be listed.
   */
  run(acct: string, runId: string): string {
    return `${this.acctTag(acct)}:run:${acct}:${runId}`
  }
  /** The account's run ids by opening instant (ms): GET /v1/runs lists them without SCAN. */
  runs(acct: string): string {
    return `${this.acctTag(acct)}:runs:${acct}`
  }
  recentCalls(acct: string): string {
    return `${this.acctTag(acct)}:calls:${acct}`
  }
  /** Auto-refill mandate: limits, saved card, and the one refill in flight (the refill lock). */
  mandate(acct: string): string {
    return `${this.acctTag(acct)}:mandate:${acct}`
  }
  /** Credits refilled under the mandate in one HKT month (`YYYY-MM`): the ceiling's window. */
  refills(acct: string, month: string): string {
    return `${this.acctTag(acct)}:refills:${acct}:${month}`
  }
  /** The explicit top-up (POST /v1/topup) of one HKT day: at most one. */
  topupDay(acct: string, day: number): string {
    return `${this.acctTag(acct)}:topup:${acct}:${day}`
  }
  /** A card charge already credited or parked: dedupe of webhook replays and retries. */
  charge(acct: string, chargeId: string): string {
    return `${this.acctTag(acct)}:charge:${acct}:${chargeId}`
  }
  /** Credits already taken back (or found unrecoverable) of a refunded or disputed charge, per cause. */
  reversal(acct: string, chargeId: string): string {
    return `${this.acctTag(acct)}:reversal:${acct}:${chargeId}`
  }
  /**
   * The account's proposals (docs/api.md §11): id → the JSON record. One hash per account, so that
   * propose.lua and decide-proposal.lua name every proposal they touch through one key.
   */
  proposals(acct: string): string {
    return `${this.acctTag(acct)}:props:${acct}`
  }
  /** The account's pending proposals by expiry (ms): the expiry sweep and the per-agent limit. */
  pendingProposals(acct: string): string {
    return `${this.acctTag(acct)}:propq:${acct}`
  }
  /**
   * An owner console session (cookie `<acct>.<id>`), under the SHA-256 of its id: in the account's
   * slot so console-session.lua compares it with the account's current owner token in one script.
   */
  consoleSession(acct: string, idHash: string): string {
    return `${this.acctTag(acct)}:csess:${acct}:${idHash}`
  }
  /**
   * A console form already posted (its one-time token's nonce, src/auth/console-session.ts): claimed
   * with SET NX, so the same rendered form acts once. In the account's slot, beside its sessions.
   */
  consoleForm(acct: string, nonce: string): string {
    return `${this.acctTag(acct)}:cform:${acct}:${nonce}`
  }
  /**
   * An OAuth authorization code (docs/mcp-oauth.md), under the SHA-256 of its secret: who allowed
   * what (client, redirect, PKCE challenge, resource, the agent made). Redeemed once by
   * oauth-redeem.lua, which keeps it marked `used` so that a second redemption revokes the grant.
   */
  oauthCode(acct: string, secretHash: string): string {
    return `${this.acctTag(acct)}:oacode:${acct}:${secretHash}`
  }
  /** An OAuth grant: the current access and refresh token hashes of one consent, and its agent. */
  oauthGrant(acct: string, grantId: string): string {
    return `${this.acctTag(acct)}:ogrant:${acct}:${grantId}`
  }
  /** A grant's refresh token hashes already rotated away: one presented again revokes the grant. */
  oauthGrantUsed(acct: string, grantId: string): string {
    return `${this.acctTag(acct)}:ogused:${acct}:${grantId}`
  }
  /** Throttle of token-recovery e-mails: one per account per (app-clock) minute window. */
  recoveryMailed(acct: string, minute: number): string {
    return `${this.acctTag(acct)}:recmail:${acct}:${minute}`
  }

  // ---- per shard ----
  /** A card payment parked because it would pass the balance cap (id `pk_NN_…` names the shard). */
  parked(shard: Shard, id: string): string {
    return `${this.tag(shard)}:parked:${id}`
  }
  /** The shard's parked payments awaiting the founder (sorted set by time). */
  parkedQueue(shard: Shard): string {
    return `${this.tag(shard)}:parkedq`
  }
  outbox(shard: Shard): string {
    return `${this.tag(shard)}:outbox`
  }
  /**
   * Outbox entries Postgres refused (poison), with the error, awaiting the founder. Per shard, in
   * the outbox's slot, so moving an entry between the two is one atomic script on Redis Cluster.
   */
  deadLetters(shard: Shard): string {
    return `${this.tag(shard)}:deadletters`
  }
  /** Calls debited but neither recorded nor refunded yet, scored by their abandon deadline. */
  inflight(shard: Shard): string {
    return `${this.tag(shard)}:inflight`
  }
  /**
   * Present while the shard's data is whole: written when the ledger is first initialised and by
   * every rebuild. Redis that comes back empty (no persistence, a fresh replica) lacks it, and the
   * service then refuses money paths until it has rebuilt the shard (src/ledger/availability.ts).
   */
  ledgerMark(shard: Shard): string {
    return `${this.tag(shard)}:ledgermark`
  }
  /** Public counters of the shard (summed over shards by /v1/public-stats). */
  stats(shard: Shard): string {
    return `${this.tag(shard)}:stats`
  }

  // ---- global lookups (single-key commands, any slot) ----
  token(hash: string): string {
    return `${this.prefix}:tok:${hash}`
  }
  email(email: string): string {
    return `${this.prefix}:email:${email}`
  }
  publicRef(ref: string): string {
    return `${this.prefix}:ref:${ref}`
  }
  /** Mandate consent ref → account (the /mandate?ref= page). */
  mandateRef(ref: string): string {
    return `${this.prefix}:mref:${ref}`
  }
  /** A vault link, under the SHA-256 of its code (the code itself is never stored). */
  vaultLink(codeHash: string): string {
    return `${this.prefix}:vlink:${codeHash}`
  }
  /** A token-recovery link (/rotate?code=), under the SHA-256 of its code; same record as a vault link. */
  recoveryLink(codeHash: string): string {
    return `${this.prefix}:rlink:${codeHash}`
  }
  /** A one-time operator-channel link code (POST /v1/operator/link), under the SHA-256 of the code. */
  operatorLink(codeHash: string): string {
    return `${this.prefix}:oplink:${codeHash}`
  }
  /** A Telegram update already handled: Bot API redeliveries are answered once. */
  telegramUpdate(updateId: number): string {
    return `${this.prefix}:tgupd:${updateId}`
  }
  /** A processed Stripe webhook event id: a replayed delivery is acknowledged and skipped. */
  webhookEvent(eventId: string): string {
    return `${this.prefix}:whevt:${eventId}`
  }
  ipRateWindow(ip: string, window: number): string {
    return `${this.prefix}:{ip:${ip}}:rl:${window}`
  }
  /** A dynamically registered OAuth client (RFC 7591): its name and redirect URIs, as JSON. */
  oauthClient(clientId: string): string {
    return `${this.prefix}:oclient:${clientId}`
  }
  /** OAuth client registrations from one client address in one clock hour (the registration bound). */
  oauthRegistrations(ip: string, hour: number): string {
    return `${this.prefix}:oreg:${ip}:${hour}`
  }
  /** The automatic rebuild's lock (SET NX PX): one instance rebuilds, the others wait for the marks. */
  rebuildLock(): string {
    return `${this.prefix}:rebuildlock`
  }
  /** The reconciliation's lock (SET NX PX): one instance runs the day's reconciliation (docs/api.md §13d). */
  billCheckLock(): string {
    return `${this.prefix}:billchecklock`
  }
  /** Set of paused capability slugs. */
  paused(): string {
    return `${this.prefix}:paused`
  }
  /**
   * Signup alarm: the pause flag and the signups admitted in the last hour (a sorted set by time).
   * Both carry the `{signups}` tag because signup-gate.lua reads and writes them in one script.
   */
  signupsPaused(): string {
    return `${this.prefix}:{signups}:paused`
  }
  signupsRecent(): string {
    return `${this.prefix}:{signups}:recent`
  }
  /** Spend alarm: credits spent per capability slug in one clock hour (hash slug → credits). */
  capabilitySpend(hour: number): string {
    return `${this.prefix}:alarm:spend:${hour}`
  }
  /** Spend alarm: capabilities whose alarm already tripped in that hour (trip once per hour). */
  spendAlarmTripped(hour: number): string {
    return `${this.prefix}:alarm:tripped:${hour}`
  }
}
