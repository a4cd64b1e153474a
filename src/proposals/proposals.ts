/**
 * Proposals (docs/api.md §11): an agent asks its operator for more room — a higher daily cap, a bigger
 * budget, one more allowlist pattern, a top-up — with a reason, and the operator approves or
 * declines. The REST routes, the operator chat, the owner console and the MCP endpoint all call
 * these functions; every state change is one script (propose.lua, decide-proposal.lua), so two
 * operators racing on one proposal cannot both win, and an approval applies its policy change in
 * the script that moves the proposal. A top-up goes through POST /v1/topup's own service (the
 * mandate, every rule of the direct endpoint) under a claim on the proposal, and so does a budget
 * (PUT /v1/policies' path, which moves the parent's carve for a sub-agent).
 * errors: BAD_REQUEST (kind, value, agent_id; a decision's note over 280 characters, checked here
 *         for every caller as the REST body is), NOT_FOUND (proposal, agent outside the caller's
 *         subtree), RATE_LIMITED (10 pending per agent), CONFLICT (not pending → `status`; being
 *         applied; revoked agent), POLICY_DENIED (a pattern the account allowlist refuses), and
 *         whatever POST /v1/topup or PUT /v1/policies answers for a topup or a budget.
 */
import { randomId } from '../auth/tokens'
import type { Principal } from '../auth/principal'
import { ApiError } from '../errors'
import { readAgent, subtreeOf } from '../governance/agents'
import { encodeAllowlist, MAX_PATTERNS } from '../governance/allowlist'
import { MAX_CREDITS } from '../governance/model'
import { chargeableProblem } from '../payments/amounts'
import { checkField } from '../schema-check'
import { checkText } from '../edge/text'
import { runDecideProposal, runPropose, type DecideAction, type DecideReply } from '../lua/proposals'
import type { RedisContext } from '../redis/context'
import {
  DecisionNote,
  MAX_PENDING_PER_AGENT,
  PROPOSAL_ID,
  PROPOSAL_TTL_MS,
  RaiseSeconds,
  parseRecord,
  statusUrlBase,
  viewOf,
  type ProposalKind,
  type ProposalRecord,
  type ProposalStatus,
  type ProposalView,
} from './record'

export interface ProposalDeps {
  ctx: RedisContext
  /** POST /v1/topup's service for the account: through the mandate, with every rule it has. */
  topup(accountId: string, credits: number): Promise<unknown>
  /** PUT /v1/policies' service, for one agent's lifetime budget (docs/api.md §8 checks included). */
  setBudget(accountId: string, agentId: string, budget: number): Promise<unknown>
}

export interface NewProposal {
  kind: ProposalKind
  value: number | string
  agent_id?: string
  reason: string
  /** A temporary raise asked for, seconds (docs/api.md §13b). */
  for_s?: number
}

/** Who asks: the principal's account and agent (null = the owner). */
type Caller = Pick<Principal, 'accountId' | 'agentId'>

/** How long an approval's top-up may hold the proposal before another approval may try. */
const CLAIM_LEASE_MS = 120_000

const notFound = () => new ApiError('NOT_FOUND', { resource: 'proposal' })

export async function createProposal(d: ProposalDeps, who: Caller, body: NewProposal): Promise<ProposalView> {
  const { ctx } = d
  const value = checkValue(d, body.kind, body.value)
  const agentId = await targetAgent(ctx, who, body)
  if (body.for_s !== undefined) await checkRaise(ctx, who.accountId, { kind: body.kind, agent_id: agentId ?? undefined }, body.for_s)
  const id = 'prop_' + randomId()
  const now = ctx.clock.now()
  const expires = now + PROPOSAL_TTL_MS
  const reply = await runPropose(ctx, {
    now,
    accountId: who.accountId,
    id,
    kind: body.kind,
    value,
    agentId,
    by: who.agentId ?? 'owner',
    reason: body.reason,
    expires,
    statusUrlBase: statusUrlBase(ctx.cfg.BASE_URL),
    maxPending: MAX_PENDING_PER_AGENT,
    forS: body.for_s,
  })
  if (reply.status === 'rate_limited') {
    const retry = Math.max(1, Math.ceil(reply.retryAfterMs / 1000))
    throw new ApiError('RATE_LIMITED', { retry_after_s: retry, reason: `at most ${MAX_PENDING_PER_AGENT} pending proposals per agent; wait for a decision or an expiry` }, { 'retry-after': String(retry) })
  }
  return (await readView(d, who.accountId, id))!
}

/**
 * One proposal of the caller's account; another account's → NOT_FOUND. An agent reads those of its
 * own subtree only, as its list shows (a sibling's value and reason are not its to read).
 */
export async function getProposal(d: ProposalDeps, who: Caller, id: string): Promise<ProposalView> {
  if (!PROPOSAL_ID.test(id)) throw notFound()
  const view = await readView(d, who.accountId, id)
  if (!view || !(await reachOf(d.ctx, who))(view.agent_id)) throw notFound()
  return view
}

/** Which proposals the caller reaches, by the agent they are for (null: the account's own, the operator's alone). */
async function reachOf(ctx: RedisContext, who: Caller): Promise<(agentId: string | null | undefined) => boolean> {
  if (who.agentId === null) return () => true
  const subtree = await subtreeOf(ctx, who.accountId, who.agentId)
  return (agentId) => agentId !== undefined && agentId !== null && subtree.has(agentId)
}

/** The owner sees every proposal of the account; an agent those for its subtree. Newest first. */
export async function listProposals(d: ProposalDeps, who: Caller, status?: ProposalStatus): Promise<ProposalView[]> {
  const { ctx } = d
  let records = await readRecords(ctx, who.accountId)
  const due = records.filter((r) => isDue(ctx, r))
  if (due.length > 0) {
    await Promise.all(due.map((r) => decide(ctx, who.accountId, r, 'expire', 'api', '')))
    records = await readRecords(ctx, who.accountId)
  }
  const reaches = await reachOf(ctx, who)
  return records
    .filter((r) => reaches(r.agent_id))
    .filter((r) => status === undefined || r.status === status)
    .sort((a, b) => b.created - a.created || b.id.localeCompare(a.id))
    .map((r) => viewOf(r, ctx.cfg.BASE_URL))
}

/**
 * Approves and applies (operator only; the caller checked the role). A policy kind is applied by
 * decide-proposal.lua with the proposal's move; a top-up is claimed, run through POST /v1/topup's
 * service, then approved — or released and its error answered, the proposal still pending.
 */
export async function approveProposal(d: ProposalDeps, accountId: string, id: string, note = '', via: 'api' | 'chat' = 'api', forS?: number): Promise<ProposalView> {
  const { ctx } = d
  checkNote(note)
  const rec = await readRecord(ctx, accountId, id)
  // The duration the proposer asked for, unless the operator names another.
  forS ??= rec.for_s
  if (forS !== undefined) {
    await checkRaise(ctx, accountId, rec, forS)
    decided(await decide(ctx, accountId, rec, 'approve', via, note, '', forS * 1000))
    return (await readView(d, accountId, id))!
  }
  // A budget moves a parent's carve (docs/api.md §8), so it goes through PUT /v1/policies' own path,
  // held like a top-up: claimed, applied by that service, then approved or released.
  const apply =
    rec.kind === 'topup' ? () => d.topup(accountId, Number(rec.value)) : rec.kind === 'raise_budget' ? () => d.setBudget(accountId, rec.agent_id!, Number(rec.value)) : null
  if (!apply) {
    decided(await decide(ctx, accountId, rec, 'approve', via, note))
    return (await readView(d, accountId, id))!
  }
  const token = randomId()
  decided(await decide(ctx, accountId, rec, 'claim', via, note, token))
  try {
    await apply()
  } catch (e) {
    // A top-up whose card may have been charged (parked, or its outcome not known yet) is this
    // proposal's: approved, not put back to pending, or approving it again could charge twice.
    await decide(ctx, accountId, rec, mayHaveCharged(e) ? 'finish' : 'release', via, note, token)
    throw e
  }
  await decide(ctx, accountId, rec, 'finish', via, note, token)
  return (await readView(d, accountId, id))!
}

/** POST /v1/topup's refusals after which the card may still be charged: a parked payment, an outcome the processor has not given yet. */
function mayHaveCharged(e: unknown): boolean {
  if (!(e instanceof ApiError)) return false
  return (e.code === 'BALANCE_CAP' && e.context.parked === true) || (e.code === 'CONFLICT' && e.context.charge_pending === true)
}

/** Declines (operator only): nothing changes but the proposal's state. */
export async function declineProposal(d: ProposalDeps, accountId: string, id: string, note = '', via: 'api' | 'chat' = 'api'): Promise<ProposalView> {
  checkNote(note)
  const rec = await readRecord(d.ctx, accountId, id)
  decided(await decide(d.ctx, accountId, rec, 'decline', via, note))
  return (await readView(d, accountId, id))!
}

// ---- checks ----

/**
 * A temporary raise (docs/api.md §13b): a duration in bounds, for a policy that can lapse. A top-up
 * cannot be taken back, and a sub-agent's budget is carved from its parent's (docs/api.md §8), so
 * only a lasting approval moves it. A proposal already decided is left to the script's CONFLICT.
 */
async function checkRaise(ctx: RedisContext, acct: string, rec: Pick<ProposalRecord, 'kind' | 'agent_id'> & { status?: string }, forS: number): Promise<void> {
  checkField(RaiseSeconds, forS, 'for_s')
  if (rec.status !== undefined && rec.status !== 'pending') return
  if (rec.kind === 'topup') throw new ApiError('BAD_REQUEST', { field: 'for_s', expected: 'no duration: a top-up cannot lapse (approve it without for_s)' })
  if (rec.kind === 'raise_budget' && (await readAgent(ctx, acct, rec.agent_id!)).parent_id !== null)
    throw new ApiError('BAD_REQUEST', { field: 'for_s', expected: "no duration: a sub-agent's budget is carved from its parent's and is raised for good only" })
}

/**
 * The note as the REST body holds it, for every caller: at most 280 characters, one line without
 * control characters or bidirectional overrides. The chat's message is checked as multi-line text
 * at its edge, so without this a note sent there could carry U+202E into the events and the API.
 */
function checkNote(note: string): void {
  checkField(DecisionNote, note, 'note')
  checkText({ note })
}

function checkValue(d: ProposalDeps, kind: ProposalKind, value: number | string): string {
  if (kind === 'allow') {
    if (typeof value !== 'string') throw new ApiError('BAD_REQUEST', { field: 'value', expected: 'an allowlist pattern (a string) for kind allow' })
    try {
      return encodeAllowlist([value], 'value')!
    } catch (e) {
      if (e instanceof ApiError) throw new ApiError('BAD_REQUEST', { ...e.context, field: 'value' })
      throw e
    }
  }
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > MAX_CREDITS)
    throw new ApiError('BAD_REQUEST', { field: 'value', expected: `an integer number of credits from 0 to ${MAX_CREDITS}` })
  if (kind === 'topup') {
    const p = chargeableProblem(value, d.ctx.cfg.CREDITS_PER_USD)
    if (p) throw new ApiError('BAD_REQUEST', { field: 'value', expected: p })
  }
  return String(value)
}

/** The agent the proposal is for (null = the account); an agent reaches only its own subtree. */
async function targetAgent(ctx: RedisContext, who: Caller, body: NewProposal): Promise<string | null> {
  if (who.agentId !== null) {
    const id = body.agent_id ?? who.agentId
    if (!(await subtreeOf(ctx, who.accountId, who.agentId)).has(id)) throw new ApiError('NOT_FOUND', { resource: 'agent' })
    // A revoked descendant, as for the owner: nothing could ever approve it.
    return live(await readAgent(ctx, who.accountId, id))
  }
  if (body.agent_id === undefined) {
    if (body.kind === 'raise_daily_cap' || body.kind === 'topup') return null
    throw new ApiError('BAD_REQUEST', { field: 'agent_id', expected: `the id of the agent whose ${body.kind === 'allow' ? 'allowlist' : 'budget'} changes` })
  }
  return live(await readAgent(ctx, who.accountId, body.agent_id))
}

function live(agent: { id: string; state: string }): string {
  if (agent.state === 'revoked') throw new ApiError('CONFLICT', { reason: `agent ${agent.id} is revoked for good; its policy no longer matters` })
  return agent.id
}

// ---- Redis ----

function decide(ctx: RedisContext, acct: string, rec: ProposalRecord, action: DecideAction, via: 'api' | 'chat', note: string, claim = '', forMs?: number): Promise<DecideReply> {
  return runDecideProposal(ctx, {
    now: ctx.clock.now(),
    accountId: acct,
    id: rec.id,
    agentId: rec.agent_id ?? null,
    action,
    via,
    note,
    statusUrlBase: statusUrlBase(ctx.cfg.BASE_URL),
    claim,
    claimLeaseMs: CLAIM_LEASE_MS,
    maxPatterns: MAX_PATTERNS,
    forMs,
  })
}

/** A decision's reply as the API answers it; returns only when the proposal moved (or was claimed). */
function decided(reply: DecideReply): void {
  switch (reply.status) {
    case 'ok':
      return
    case 'wrong_state':
      throw new ApiError('CONFLICT', { reason: `the proposal is already ${reply.state}`, status: reply.state })
    case 'applying':
      throw new ApiError('CONFLICT', { reason: 'an approval of this proposal is being applied (its top-up is at the card processor)', status: 'pending' })
    case 'not_found':
      throw new ApiError('NOT_FOUND', { resource: reply.what })
    case 'agent_revoked':
      throw new ApiError('CONFLICT', { reason: 'the agent is revoked for good; its policy no longer matters', status: 'pending' })
    case 'denied_account_allowlist':
      throw new ApiError('POLICY_DENIED', { rule: 'account_allowlist', raised_by: 'operator', raise_via: 'PUT /v1/policies' })
    case 'limit_reached':
      throw new ApiError('BAD_REQUEST', { field: 'allowlist', expected: `at most ${reply.max} patterns` })
  }
}

const isDue = (ctx: RedisContext, r: ProposalRecord) => r.status === 'pending' && ctx.clock.now() >= r.expires && !(r.claim && (r.claim_until ?? 0) > ctx.clock.now())

async function readRecords(ctx: RedisContext, acct: string): Promise<ProposalRecord[]> {
  const all = await ctx.redis.hvals(ctx.keys.proposals(acct))
  return all.map(parseRecord)
}

async function readRecord(ctx: RedisContext, acct: string, id: string): Promise<ProposalRecord> {
  const raw = PROPOSAL_ID.test(id) ? await ctx.redis.hget(ctx.keys.proposals(acct), id) : null
  if (!raw) throw notFound()
  return parseRecord(raw)
}

/** The proposal as shown, after moving it to `expired` if its time is up (a read also expires). */
async function readView(d: ProposalDeps, acct: string, id: string): Promise<ProposalView | null> {
  const { ctx } = d
  const raw = await ctx.redis.hget(ctx.keys.proposals(acct), id)
  if (!raw) return null
  let rec = parseRecord(raw)
  if (isDue(ctx, rec)) {
    await decide(ctx, acct, rec, 'expire', 'api', '')
    rec = parseRecord((await ctx.redis.hget(ctx.keys.proposals(acct), id))!)
  }
  return viewOf(rec, ctx.cfg.BASE_URL)
}
