/**
 * Proposals: propose.lua and decide-proposal.lua (see their Lua headers).
 */
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import { num, statusOf, str, unexpected } from './reply'

export interface ProposeArgs {
  now: number
  accountId: string
  id: string
  kind: string
  /** Credits as digits, or the pattern of an `allow`. */
  value: string
  /** null = the account's own. */
  agentId: string | null
  /** The proposing agent's id, or `owner`. */
  by: string
  reason: string
  expires: number
  /** `{BASE_URL}/v1/proposals/`: the events carry status_url. */
  statusUrlBase: string
  maxPending: number
  /** The raise's duration asked for, seconds (docs/api.md §13b); absent = a lasting change. */
  forS?: number
}

export type ProposeReply = { status: 'ok' } | { status: 'rate_limited'; retryAfterMs: number }

export async function runPropose(ctx: RedisContext, a: ProposeArgs): Promise<ProposeReply> {
  const { keys } = ctx
  const reply = await ctx.scripts.propose(
    [keys.proposals(a.accountId), keys.pendingProposals(a.accountId), keys.outbox(keys.shardOf(a.accountId))],
    [a.now, a.accountId, a.id, a.kind, a.value, a.agentId ?? '', a.by, a.reason, a.expires, new Date(a.expires).toISOString(), a.statusUrlBase, a.maxPending, ...(a.forS === undefined ? [] : [a.forS])],
  )
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok' }
    case S.RATE_LIMITED:
      return { status: 'rate_limited', retryAfterMs: num(reply, 1) }
    default:
      throw unexpected('propose.lua', reply)
  }
}

export type DecideAction = 'approve' | 'decline' | 'expire' | 'claim' | 'finish' | 'release'

export interface DecideArgs {
  now: number
  accountId: string
  id: string
  /** The proposal's agent (its hash is checked and written by an approval); null = the account. */
  agentId: string | null
  action: DecideAction
  via: 'api' | 'chat'
  note: string
  statusUrlBase: string
  /** The approval's claim token (claim, finish, release). */
  claim: string
  claimLeaseMs: number
  maxPatterns: number
  /** approve: a temporary raise's duration, ms (docs/api.md §13b); absent = a lasting change. */
  forMs?: number
}

export type DecideReply =
  /** `changed` 0: approved, but the agent already had what was asked (e.g. a pattern it was allowed). */
  | { status: 'ok'; state: string; changed: boolean }
  /** Not pending: approved, declined or expired (an expiry found due is applied first). */
  | { status: 'wrong_state'; state: string }
  | { status: 'applying' }
  | { status: 'not_found'; what: string }
  | { status: 'agent_revoked' }
  | { status: 'denied_account_allowlist' }
  | { status: 'limit_reached'; max: number }

export async function runDecideProposal(ctx: RedisContext, a: DecideArgs): Promise<DecideReply> {
  const { keys } = ctx
  const reply = await ctx.scripts.decideProposal(
    [keys.proposals(a.accountId), keys.pendingProposals(a.accountId), keys.account(a.accountId), keys.agent(a.accountId, a.agentId), keys.outbox(keys.shardOf(a.accountId))],
    [
      a.now, a.accountId, a.id, a.action, a.via, a.note, a.statusUrlBase, a.claim, a.claimLeaseMs, a.maxPatterns,
      ...(a.forMs === undefined ? [] : [a.forMs, new Date(a.now + a.forMs).toISOString()]),
    ],
  )
  switch (statusOf(reply)) {
    case S.OK:
      return { status: 'ok', state: str(reply, 1), changed: num(reply, 2) === 1 }
    case S.WRONG_STATE:
      return { status: 'wrong_state', state: str(reply, 1) }
    case S.APPLYING:
      return { status: 'applying' }
    case S.NOT_FOUND:
      return { status: 'not_found', what: str(reply, 1) }
    case S.AGENT_REVOKED:
      return { status: 'agent_revoked' }
    case S.DENIED_ACCOUNT_ALLOWLIST:
      return { status: 'denied_account_allowlist' }
    case S.LIMIT_REACHED:
      return { status: 'limit_reached', max: num(reply, 1) }
    default:
      throw unexpected('decide-proposal.lua', reply)
  }
}
