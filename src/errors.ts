/**
 * The error registry: the single source of every error code's HTTP status, message and context
 * fields. Handlers throw `new ApiError(code, context)`; `/errors.md` and the OpenAPI document are
 * generated from this table, so the three never drift apart.
 */

export interface ErrorSpec {
  status: number
  /** What unblocks the caller. `{field}` placeholders are filled from the context. */
  message: string
  /** Context fields clients can rely on (docs/api.md §3). */
  context: readonly string[]
}

export const ERRORS = {
  PAYMENT_REQUIRED: {
    status: 402,
    message:
      'Balance too low for this call ({price} credits needed, {balance} available). Relay human_readable to the user verbatim, then retry the same call after a top-up or after enabling auto-refill at enable_url.',
    context: ['human_readable', 'enable_url', 'balance', 'price', 'topup_url', 'reason', 'propose_via', 'kind', 'affordable_max_tokens'],
  },
  UNAUTHORIZED: {
    status: 401,
    message: 'Missing or invalid bearer token. Obtain one with POST /v1/signup, or replace a lost one with POST /v1/token/rotate.',
    context: [],
  },
  AGENT_KILLED: {
    status: 403,
    // A placeholder must name a context field: `{id}` was rendered as the bare word "id".
    message:
      'This agent token was killed (reason: {reason} — "operator" by hand, or "breaker": the runaway-agent breaker saw too many credits or identical requests in a minute). Only the operator can revive it (/revive in the operator channel, or POST /v1/agents/{agent_id}/revive; when by_ancestor is set, that ancestor is the one killed: revive it instead).',
    context: ['agent_id', 'reason', 'by_ancestor'],
  },
  AGENT_REVOKED: {
    status: 403,
    message: 'This agent token is permanently revoked (or past its expires_at: reason "expired"; or an ancestor is: by_ancestor). Ask the account operator, or the parent agent, for a new agent token.',
    context: ['agent_id', 'reason', 'by_ancestor'],
  },
  POLICY_DENIED: {
    status: 403,
    message: 'Blocked by the {rule} policy before dispatch. The {raised_by} can change it via {raise_via}.',
    // price: per_call_max's; resets_at: agent_daily_cap's; parent_id: exceeds_parent's; run_id … expires_at: run_budget's; propose_temporary: a cap's (ledger/denials.ts, governance/agents.ts).
    context: ['rule', 'raised_by', 'raise_via', 'cap', 'price', 'spent', 'resets_at', 'propose_via', 'kind', 'propose_temporary', 'by_ancestor', 'budget', 'spent_total', 'field', 'limit', 'max_depth', 'parent_id', 'run_id', 'reason', 'max', 'expires_at'],
  },
  DAILY_CAP_REACHED: {
    status: 429,
    message: 'The account daily spend cap ({cap} credits) is reached. It resets at {resets_at} (00:00 HKT); the operator can raise it via PUT /v1/policies.',
    context: ['cap', 'spent', 'resets_at', 'raise_via', 'propose_via', 'kind', 'propose_temporary'],
  },
  RATE_LIMITED: {
    status: 429,
    message: 'Too many requests. Retry in {retry_after_s} seconds.',
    context: ['retry_after_s'],
  },
  UNKNOWN_API: {
    status: 404,
    message: 'No capability with slug "{slug}". Discover slugs with GET /v1/search?q=.',
    context: ['slug', 'search_url'],
  },
  API_PAUSED: {
    status: 503,
    message: 'Capability "{slug}" is temporarily paused (spend alarm or provider issue). Check GET /status, or try another slug.',
    context: ['slug', 'status_url'],
  },
  API_UNAVAILABLE: {
    status: 503,
    message: 'Capability "{slug}" is not configured on this deployment. See GET /capabilities for what is live.',
    context: ['slug', 'capabilities_url'],
  },
  BYOK_REQUIRED: {
    status: 402,
    message:
      'This capability or proxy path needs your own {provider} key (the house key serves only priced or opened paths, listed in /llms-full.txt). Request a one-time vault link with POST /v1/keys/link and give it to the key owner.',
    context: ['provider', 'link_via'],
  },
  VAULT_KEY_MISSING: {
    status: 409,
    message: 'No vaulted {provider} key on this account. Request a one-time vault link with POST /v1/keys/link.',
    context: ['provider', 'link_via'],
  },
  VAULT_UNAVAILABLE: {
    status: 503,
    message:
      'The key vault holding your {provider} key did not answer in time, so the request was not sent; the debit was refunded. Retry in {retry_after_s} seconds (GET /status shows whether the database is down).',
    context: ['provider', 'refunded', 'retry_after_s', 'status_url'],
  },
  KEY_UNREADABLE: {
    status: 500,
    message: 'The vaulted {provider} key could not be decrypted. Re-vault it through a fresh link (POST /v1/keys/link); contact support if it repeats.',
    context: ['provider', 'link_via'],
  },
  LINK_INVALID: {
    status: 400,
    message:
      'This one-time link is malformed or expired (links live 10 minutes). Request a new one: a vault link with POST /v1/keys/link, a token-recovery link with POST /v1/token/rotate {"email"}.',
    context: ['renew_via'],
  },
  LINK_USED: {
    status: 409,
    message:
      'This one-time link was already used; links are single-use. Request a new one: a vault link with POST /v1/keys/link, a token-recovery link with POST /v1/token/rotate {"email"}.',
    context: ['renew_via'],
  },
  PROVIDER_ERROR: {
    status: 502,
    message: 'The upstream provider failed; the debit was refunded automatically. Retry later or try another slug.',
    context: ['refunded', 'call_id', 'provider_status'],
  },
  RESPONSE_TOO_LARGE: {
    status: 502,
    message: 'The upstream response exceeded the proxy cap of {cap} bytes; the debit was refunded. Narrow the request.',
    context: ['cap', 'refunded'],
  },
  PROXY_UNKNOWN_PROVIDER: {
    status: 404,
    message: 'No proxy route for provider "{provider}" at this path (on the house key only house_allow is served, when set). Proxy routes are listed in /llms-full.txt.',
    context: ['provider', 'house_allow'],
  },
  PROXY_BAD_PATH: {
    status: 400,
    message: 'The proxy path failed safety checks (no "..", no "//", no absolute URLs, only the provider\'s allowed prefixes). Routes are listed in /llms-full.txt.',
    context: ['reason'],
  },
  REQUEST_CAP_REACHED: {
    status: 429,
    message: 'The daily request cap ({cap}) for unpriced routes is reached. It resets at {resets_at} (00:00 HKT).',
    context: ['cap', 'used', 'resets_at'],
  },
  CONSENT_REQUIRED: {
    status: 400,
    message: 'Auto-refill needs the saved-card consent flow first. Open enable_url ({enable_url}) and complete it.',
    context: ['enable_url'],
  },
  BALANCE_CAP: {
    status: 409,
    message: 'This top-up would take the balance past the account balance cap ({balance_cap} credits). Spend down first; over-cap card payments are parked for review.',
    context: ['balance_cap', 'balance', 'parked'],
  },
  EMAIL_EXISTS: {
    status: 409,
    message: 'An account with this e-mail exists. Use its token, or POST /v1/token/rotate with {"email"} if it was lost.',
    context: [],
  },
  SIGNUPS_PAUSED: {
    status: 503,
    message: 'Signups are paused by a trial-abuse alarm. Try again later.',
    context: [],
  },
  NOT_CONFIGURED: {
    status: 503,
    message: 'This deployment lacks the secret required for {feature} ({needs}). The operator has been signaled.',
    context: ['feature', 'needs'],
  },
  LEDGER_UNAVAILABLE: {
    status: 503,
    message:
      'The balance ledger is being restored after a data store failure; no money moves until it is whole. Nothing was charged: retry the same request in {retry_after_s} seconds (GET /status shows progress).',
    context: ['retry_after_s', 'status_url'],
  },
  CONFLICT: {
    status: 409,
    message: 'The resource is already in the requested state: {reason}.',
    context: ['reason', 'status', 'charge_pending', 'resets_at', 'refilled_this_period', 'pending_this_period', 'ceiling'],
  },
  FORBIDDEN: {
    status: 403,
    message: 'This surface is reserved to the {role}.',
    context: ['role'],
  },
  BAD_REQUEST: {
    status: 400,
    message: 'Malformed request: {field} must be {expected}.',
    context: ['field', 'expected'],
  },
  NOT_FOUND: {
    status: 404,
    message: 'No such {resource} on this account.',
    // agent_id: the unknown id of a PUT /v1/policies naming several agents; field: where a proxied
    // request named a provider object the account does not own (docs/house-objects.md).
    context: ['resource', 'agent_id', 'field'],
  },
  INTERNAL: {
    status: 500,
    message: 'Unexpected server error. Quote request_id to support (POST /v1/support).',
    context: ['request_id'],
  },
} as const satisfies Record<string, ErrorSpec>

export type ErrorCode = keyof typeof ERRORS

export type ErrorContext = Record<string, unknown>

export class ApiError extends Error {
  readonly status: number
  constructor(
    readonly code: ErrorCode,
    readonly context: ErrorContext = {},
    /** Extra response headers (Retry-After and friends). */
    readonly headers: Record<string, string> = {},
  ) {
    super(code)
    this.status = ERRORS[code].status
  }

  /** The flat body of the spec: `{error, message, ...context}`. */
  body(): Record<string, unknown> {
    return { error: this.code, message: renderMessage(this.code, this.context), ...this.context }
  }

  /** `status` overrides the registry's only for BAD_REQUEST on an oversized body (413, docs/api.md §1). */
  toResponse(status = this.status): Response {
    return new Response(JSON.stringify(this.body()), {
      status,
      headers: { 'content-type': 'application/json', ...this.headers },
    })
  }
}

export function renderMessage(code: ErrorCode, context: ErrorContext): string {
  return ERRORS[code].message.replace(/\{(\w+)\}/g, (m, k: string) =>
    context[k] === undefined ? m.replace(/[{}]/g, '') : String(context[k]),
  )
}

/** `/errors.md`: the catalog an agent reads to learn every code and its remedy. */
export function errorsMarkdown(): string {
  const rows = Object.entries(ERRORS).map(
    ([code, spec]) =>
      `| \`${code}\` | ${spec.status} | ${spec.message.replace(/\|/g, '\\|')} | ${spec.context.map((c) => `\`${c}\``).join(', ')} |`,
  )
  return [
    '# Error catalog',
    '',
    'Every error is JSON: `{"error": CODE, "message": "...what unblocks you...", ...context}`.',
    'Relay `human_readable` (PAYMENT_REQUIRED) to the user verbatim.',
    '',
    '| Code | HTTP | What it means and what unblocks you | Context fields |',
    '|---|---|---|---|',
    ...rows,
    '',
  ].join('\n')
}
