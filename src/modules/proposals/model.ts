import { Type as T } from '@sinclair/typebox'
import { DecisionNote, MAX_RAISE_S, MIN_RAISE_S, PROPOSAL_KINDS, PROPOSAL_STATUSES, RaiseSeconds } from '../../proposals/record'

// Patterns rather than unions of literals: a validation error then names the allowed values.
const oneOf = (values: readonly string[], description: string) => T.String({ pattern: `^(${values.join('|')})$`, description })

const KIND_DOC =
  'raise_daily_cap (the agent\'s daily cap; the account\'s when agent_id is absent and the owner asks), raise_budget (an agent\'s lifetime budget), ' +
  'allow (one more allowlist pattern for an agent), topup (credits, through the mandate as POST /v1/topup)'

export const NewProposalBody = T.Object(
  {
    kind: oneOf(PROPOSAL_KINDS, KIND_DOC),
    value: T.Union([T.Integer(), T.String({ maxLength: 86 })], { description: 'Credits (an integer), or the pattern for allow' }),
    agent_id: T.Optional(T.String({ maxLength: 64, description: 'The agent concerned; an agent token may name itself (the default) or its subtree' })),
    reason: T.String({ minLength: 1, maxLength: 280, description: 'Why, in at most 280 characters (metadata only: no payloads or keys)' }),
    for_s: T.Optional(
      T.Integer({ minimum: MIN_RAISE_S, maximum: MAX_RAISE_S, description: 'Ask for a temporary raise: this many seconds (60 to 2592000), after which it lapses by itself; not for a topup' }),
    ),
  },
  { additionalProperties: false },
)

export const DecisionObject = T.Object(
  { note: T.Optional(DecisionNote) },
  { additionalProperties: false },
)
/** The body may be left out. */
export const DecisionBody = T.Optional(DecisionObject)

/** An approval may be for a time (docs/api.md §13b). */
export const ApproveObject = T.Object(
  { note: T.Optional(DecisionNote), for_s: T.Optional(RaiseSeconds) },
  { additionalProperties: false },
)
export const ApproveBody = T.Optional(ApproveObject)

export const ProposalParams = T.Object({ id: T.String({ maxLength: 64 }) })

export const ProposalQuery = T.Object({ status: T.Optional(oneOf(PROPOSAL_STATUSES, PROPOSAL_STATUSES.join(' | '))) })

export const Proposal = T.Object({
  id: T.String(),
  kind: T.String(),
  value: T.Union([T.Integer(), T.String()]),
  agent_id: T.Union([T.String(), T.Null()], { description: 'null: the account itself' }),
  reason: T.String(),
  proposed_by: T.String({ description: 'The proposing agent id, or owner' }),
  status: T.String({ description: 'pending → approved | declined | expired (after 24 h)' }),
  status_url: T.String({ description: 'Poll this for the decision' }),
  created_at: T.String({ format: 'date-time' }),
  expires_at: T.String({ format: 'date-time' }),
  decided_at: T.Union([T.String({ format: 'date-time' }), T.Null()]),
  decided_via: T.Union([T.String(), T.Null()], { description: 'api | chat | expiry' }),
  note: T.Union([T.String(), T.Null()]),
  for_s: T.Union([T.Integer(), T.Null()], { description: 'The temporary raise asked for, seconds (the approval\'s default); null = a lasting change' }),
  lapses_at: T.Union([T.String({ format: 'date-time' }), T.Null()], { description: 'An approval for a time (for_s): when the raise lapses by itself; else null' }),
})

export const ProposalList = T.Object({ proposals: T.Array(Proposal) })
