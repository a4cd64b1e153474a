/**
 * A proposal as Redis holds it (one JSON value per id in the account's proposals hash, written by
 * propose.lua and decide-proposal.lua) and as the API shows it. The one parser of that JSON: the
 * service, the sink and the rebuild all read records through it.
 */
import { Type as T } from '@sinclair/typebox'

export const PROPOSAL_KINDS = ['raise_daily_cap', 'raise_budget', 'allow', 'topup'] as const
export type ProposalKind = (typeof PROPOSAL_KINDS)[number]

export const PROPOSAL_STATUSES = ['pending', 'approved', 'declined', 'expired'] as const
export type ProposalStatus = (typeof PROPOSAL_STATUSES)[number]

/** Where a decision came from: the REST API, the operator chat, or the 24 h expiry. */
export type DecidedVia = 'api' | 'chat' | 'expiry'

export const PROPOSAL_ID = /^prop_[A-Za-z0-9_-]{22}$/

/** The operator's note on a decision (the REST body's field; the service checks it for every caller). */
export const DecisionNote = T.String({ maxLength: 280, description: 'A word for the agent, shown with the decision' })

/** A temporary raise lasts from a minute to 30 days (docs/api.md §13b). */
export const MIN_RAISE_S = 60
export const MAX_RAISE_S = 30 * 24 * 3600
export const RaiseSeconds = T.Integer({ minimum: MIN_RAISE_S, maximum: MAX_RAISE_S, description: 'Approve for this many seconds only (60 to 2592000): the raise then lapses by itself' })

/** Unanswered proposals expire after this long (docs/api.md §11). */
export const PROPOSAL_TTL_MS = 24 * 3600 * 1000
/** Pending proposals one agent (or the account itself) may hold at once. */
export const MAX_PENDING_PER_AGENT = 10

export interface ProposalRecord {
  id: string
  kind: ProposalKind
  /** Credits as digits, or the pattern of an `allow`. */
  value: string
  /** Absent: the account's own. */
  agent_id?: string
  /** The proposing agent's id, or `owner`. */
  by: string
  reason: string
  status: ProposalStatus
  /** Epoch ms. */
  created: number
  expires: number
  decided?: number
  via?: DecidedVia
  note?: string
  /** Bumped on every write; the Postgres projection keeps the highest. */
  v: number
  /** An approval's top-up in flight (decide-proposal.lua claim): its token and when it lapses. */
  claim?: string
  claim_until?: number
  /** The duration the proposer asked for, seconds: the approval's default (docs/api.md §13b). */
  for_s?: number
  /** An approval with a duration: when its raise lapses, epoch ms (docs/api.md §13b). */
  lapses?: number
}

export function parseRecord(raw: string): ProposalRecord {
  const r = JSON.parse(raw) as ProposalRecord
  // cjson writes whole numbers as numbers, but a value that looks numeric may come back either way.
  return { ...r, value: String(r.value) }
}

export interface ProposalView {
  id: string
  kind: ProposalKind
  value: number | string
  agent_id: string | null
  reason: string
  proposed_by: string
  status: ProposalStatus
  status_url: string
  created_at: string
  expires_at: string
  decided_at: string | null
  decided_via: DecidedVia | null
  note: string | null
  /** The raise's duration asked for, seconds; null = a lasting change. */
  for_s: number | null
  /** When the approved raise lapses by itself; null = a lasting change (or not approved). */
  lapses_at: string | null
}

/** The value as the API shows it: credits as a number, a pattern as a string. */
export const valueOf = (kind: ProposalKind, value: string): number | string => (kind === 'allow' ? value : Number(value))

export const statusUrlBase = (baseUrl: string) => `${baseUrl}/v1/proposals/`

export function viewOf(r: ProposalRecord, baseUrl: string): ProposalView {
  return {
    id: r.id,
    kind: r.kind,
    value: valueOf(r.kind, r.value),
    agent_id: r.agent_id ?? null,
    reason: r.reason,
    proposed_by: r.by,
    status: r.status,
    status_url: statusUrlBase(baseUrl) + r.id,
    created_at: new Date(r.created).toISOString(),
    expires_at: new Date(r.expires).toISOString(),
    decided_at: r.decided === undefined ? null : new Date(r.decided).toISOString(),
    decided_via: r.via ?? null,
    note: r.note ?? null,
    for_s: r.for_s ?? null,
    lapses_at: r.lapses === undefined ? null : new Date(r.lapses).toISOString(),
  }
}
