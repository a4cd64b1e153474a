/**
 * Rebuilding an account in Redis from the durable ledger, for the day Redis loses data
 * (`bun run ledger:rebuild`, docs/operations.md). The sources, newest wins:
 *   - Postgres: the account row, its policy and agent projections, its ledger entries;
 *   - the outbox entries Redis still holds (not yet flushed): money entries, a rotated owner
 *     token, newer policy or agent versions, an account created since the last flush.
 * What is written: the account hash (balance = Σ entries, owner token, policy fields, a referral
 * still pending, the metered micro-credit remainder of the newest settle), today's spend counters
 * (so the daily caps keep holding), the agents and the live-agent set their limit counts, and the
 * global lookups (token → account, e-mail, public_ref, consent ref), the charge records of the
 * card charges credited or parked in the last 90 days (credit-topup.lua's dedupe), the reversal
 * records of refunded or disputed charges (reverse-charge.lua's dedupe), and the parked
 * payments still awaiting the founder (hash and queue entry). What cannot come back is
 * listed in docs/operations.md (in-flight idempotency keys, rate windows, mandates' cards).
 */
import { eq } from 'drizzle-orm'
import { hktDay } from '../clock'
import type { Database } from '../db/client'
import { accountPolicies, accounts, agents, parkedPayments } from '../db/schema'
import { randomId } from '../auth/tokens'
import { runRestoreAccount } from '../lua/accounts'
import { runRecountAgents } from '../lua/agents'
import { SHARDS } from '../redis/keys'
import { LAYOUT_FIELD, LAYOUT_VALUE } from '../redis/hash-layout'
import type { RedisContext } from '../redis/context'
import { CHARGE_TTL_S, DAY_KEY_TTL_S } from '../ledger/constants'
import { accountFields, accountPolicyFields, agentFields, ownerFields, scanOutbox, type AccountFields, type AccountPolicyFields, type AgentFields } from '../write-behind/outbox'
import { accountLedger, lastRemainder, type AccountLedger } from './reconcile'
import { advanceOutboxes } from '../write-behind/outbox-floor'
import { readAccount } from '../redis/account-hash'
import { tokenMapping } from '../governance/agents'
import { planProposals, restoreProposals } from '../proposals/restore'
import type { ProposalRecord } from '../proposals/record'

/** An agent as the rebuild restores it: the outbox's agent row, plus the spend and carve it derives. */
type AgentRow = Omit<AgentFields, 'account' | 'agent' | 'created' | 'at'> & {
  id: string
  createdMs: number
  /** Today's and the lifetime spend of the agent's whole subtree (what the debit adds up the chain). */
  spentToday: number
  spentTotal: number
  /** What its live children may still spend of their budgets (lua/lib/budget.lua). */
  carved: number
  /** Expired when planned: it holds nothing against its parent (`carve_freed`, lua/release-expired.lua). */
  carveFreed?: boolean
}

/** A charge record as credit-topup.lua keeps it (`charge:<acct>:<charge id>`), with what is left of its lifetime. */
interface ChargeRecord {
  charge: string
  /** The parked payment's id when the charge was parked; null when it was credited. */
  parked: string | null
  /** Credits credited (a credited charge): what a refund or dispute of it takes back. */
  credits: number | null
  ttlS: number
}

/** A reversal record as reverse-charge.lua keeps it (`reversal:<acct>:<charge id>`): credits accounted for, per cause. */
interface ReversalRecord {
  charge: string
  refund: number
  dispute: number
}

type ParkedRow = typeof parkedPayments.$inferSelect

export interface RebuildPlan {
  account: string
  balance: number
  spentToday: number
  /** Fields of the account hash besides `balance`. */
  fields: Record<string, string>
  email: string
  publicRef: string
  ownerTokenHash: string
  agents: AgentRow[]
  /** Every proposal of the account (docs/api.md §11); the pending ones are indexed again. */
  proposals: ProposalRecord[]
  /** The charge records still within their 90 days: a charge Stripe delivers again stays a duplicate. */
  charges: ChargeRecord[]
  /** The parked payments still awaiting the founder (state parked or refund_unknown in Postgres). */
  parked: ParkedRow[]
  /** Refunded or disputed charges: a redelivered refund or dispute takes nothing twice. */
  reversals: ReversalRecord[]
  ledger: { entries: number; postgres: number; outbox: number }
}

export class RebuildError extends Error {}

type Fields = Record<string, string>

/** The account's state entries still in the outbox (not yet flushed), oldest first. */
interface PendingState {
  created: AccountFields | null
  owners: string[]
  policies: AccountPolicyFields[]
  agents: AgentFields[]
}

async function pendingState(ctx: RedisContext, account: string): Promise<PendingState> {
  const out: PendingState = { created: null, owners: [], policies: [], agents: [] }
  for await (const e of scanOutbox(ctx, ctx.keys.shardOf(account))) {
    if (e.fields.acct !== account) continue
    if (e.kind === 'account') out.created ??= accountFields(e)
    else if (e.kind === 'owner') out.owners.push(ownerFields(e).ownerTokenHash)
    else if (e.kind === 'account_policy') out.policies.push(accountPolicyFields(e))
    else if (e.kind === 'agent') out.agents.push(agentFields(e))
  }
  return out
}

/** Today's spend of the account (or of one agent): debits of today minus the refunds of those debits. */
function spentToday(led: AccountLedger, day: number, agent?: string): number {
  return spentOf(led, day, agent === undefined ? undefined : new Set([agent]))
}

/**
 * The spend of some agents (all of the account's when none given): their debits (of one HKT day,
 * or of all time) minus the refunds and settle releases of those debits.
 */
function spentOf(led: AccountLedger, day: number | null, agents?: Set<string>): number {
  const counted = new Set<string>()
  let spent = 0
  for (const l of led.lines)
    if (l.kind === 'debit' && l.callId && (day === null || hktDay(l.at) === day) && (agents === undefined || (l.agent !== null && agents.has(l.agent)))) {
      counted.add(l.callId)
      spent -= l.amount
    }
  for (const l of led.lines) if (l.kind === 'refund' && l.callId && counted.has(l.callId)) spent -= l.amount
  return Math.max(0, spent)
}

/**
 * What a child holds against its parent: its unspent budget while not revoked and not expired
 * (lua/lib/budget.lua carve_of; an expired one is written back marked `carve_freed`).
 */
const carveOf = (a: AgentRow) => (a.state === 'revoked' || a.carveFreed || a.budget === null ? 0 : Math.max(0, a.budget - a.spentTotal))

/** Chains from the parent pointers, then each agent's subtree spend and its children's carve, at `now`. */
function planTree(byAgent: Map<string, AgentRow>, led: AccountLedger, day: number, now: number): void {
  // An agent expired by now can spend nothing more: its carve is not counted, and the hash says so
  // (one expiring between this plan and its write is counted, and released by the recount after it).
  for (const a of byAgent.values()) a.carveFreed = a.expires !== null && a.expires <= now
  for (const a of byAgent.values()) {
    const chain: string[] = []
    for (let p = a.parent; p && chain.length < 8; p = byAgent.get(p)?.parent ?? null) chain.push(p)
    a.chain = chain
  }
  for (const a of byAgent.values()) {
    const subtree = new Set([a.id, ...[...byAgent.values()].filter((d) => d.chain.includes(a.id)).map((d) => d.id)])
    a.spentToday = spentOf(led, day, subtree)
    a.spentTotal = spentOf(led, null, subtree)
  }
  for (const a of byAgent.values()) a.carved = 0
  for (const a of byAgent.values()) if (a.parent && byAgent.has(a.parent)) byAgent.get(a.parent)!.carved += carveOf(a)
}

/**
 * The charge records credit-topup.lua wrote that would still be alive. A parked charge's record says
 * `parked` whatever the founder decided since (an approval's top-up entry names the same charge);
 * every other top-up entry's ref (the processor's charge id) was `credited`.
 */
function chargeRecords(led: AccountLedger, parked: ParkedRow[], now: number): ChargeRecord[] {
  const out: ChargeRecord[] = []
  const add = (charge: string, at: number, parkedId: string | null, credits: number | null) => {
    const ttlS = CHARGE_TTL_S - Math.floor((now - at) / 1000)
    if (ttlS > 0) out.push({ charge, parked: parkedId, credits, ttlS })
  }
  const parkedCharges = new Set(parked.map((p) => p.chargeId))
  // The record keeps the charge's whole credits: what the entry credited plus what a reversal
  // before it left uncredited (credit-topup.lua).
  for (const l of led.lines) if (l.kind === 'topup' && l.refId && !parkedCharges.has(l.refId)) add(l.refId, l.at, null, l.amount + (l.uncredited ?? 0))
  for (const p of parked) add(p.chargeId, p.createdAt.getTime(), p.id, null)
  return out
}

/**
 * The reversal records reverse-charge.lua wrote: per charge and cause, the credits its entries
 * accounted for (taken, −amount, plus the unrecovered part, or all of it `uncredited` when it came
 * before the charge's credit). Each entry accounts for what its application added, so a cause's
 * entries sum to the cause's total.
 */
function reversalRecords(led: AccountLedger): ReversalRecord[] {
  const byCharge = new Map<string, ReversalRecord>()
  for (const l of led.lines) {
    if (l.kind !== 'reversal' || !l.refId || (l.target !== 'refund' && l.target !== 'dispute')) continue
    const r = byCharge.get(l.refId) ?? { charge: l.refId, refund: 0, dispute: 0 }
    r[l.target] += -l.amount + (l.uncredited ?? 0)
    byCharge.set(l.refId, r)
  }
  return [...byCharge.values()]
}

export async function planRebuild(ctx: RedisContext, db: Database, account: string): Promise<RebuildPlan> {
  const [row] = await db.select().from(accounts).where(eq(accounts.id, account))
  const [policy] = await db.select().from(accountPolicies).where(eq(accountPolicies.accountId, account))
  const agentRows = await db.select().from(agents).where(eq(agents.accountId, account))
  const parkedRows = await db.select().from(parkedPayments).where(eq(parkedPayments.accountId, account))
  const pending = await pendingState(ctx, account)
  const led = await accountLedger(ctx, db, account)

  const created = pending.created
  if (!row && !created) throw new RebuildError(`${account}: neither Postgres nor the outbox knows this account`)
  const owner = pending.owners.at(-1) ?? row?.ownerTokenHash ?? created!.ownerTokenHash
  const email = row?.email ?? created!.email
  const publicRef = row?.publicRef ?? created!.publicRef
  const referrer = row?.referredBy ?? created?.referrer ?? null
  const createdMs = row?.createdAt.getTime() ?? created!.at

  // Policy: the Postgres projection, unless the outbox holds a newer version.
  let pol = {
    v: policy?.version ?? 0, dailyCap: policy?.dailyCap ?? null, allow: policy?.allowlist?.join('\n') ?? null, balanceCap: policy?.balanceCap ?? null,
    thresholds: policy?.thresholds ?? null,
  }
  for (const p of pending.policies)
    if (p.version > pol.v) pol = { v: p.version, dailyCap: p.dailyCap, allow: p.allow, balanceCap: p.balanceCap, thresholds: p.thresholds }

  const day = hktDay(ctx.clock.now())
  const byAgent = new Map<string, AgentRow>()
  for (const a of agentRows)
    byAgent.set(a.id, {
      id: a.id,
      tokenHash: a.tokenHash,
      name: a.name,
      state: a.state,
      createdMs: a.createdAt.getTime(),
      version: a.version,
      dailyCap: a.dailyCap,
      allow: a.allowlist?.join('\n') ?? null,
      perCallMax: a.perCallMax,
      parent: a.parentId,
      chain: [],
      depth: a.depth,
      budget: a.budget,
      expires: a.expiresAt?.getTime() ?? null,
      spentToday: 0,
      spentTotal: 0,
      carved: 0,
    })
  for (const f of pending.agents) {
    if (f.version <= (byAgent.get(f.agent)?.version ?? 0)) continue
    byAgent.set(f.agent, {
      id: f.agent,
      tokenHash: f.tokenHash,
      name: f.name,
      state: f.state,
      createdMs: f.created,
      version: f.version,
      dailyCap: f.dailyCap,
      allow: f.allow,
      perCallMax: f.perCallMax,
      parent: f.parent,
      chain: f.chain,
      depth: f.depth,
      budget: f.budget,
      expires: f.expires,
      spentToday: 0,
      spentTotal: 0,
      carved: 0,
    })
  }
  planTree(byAgent, led, day, ctx.clock.now())

  const fields: Fields = {
    owner,
    email,
    public_ref: publicRef,
    balance_cap: String(pol.balanceCap ?? ctx.cfg.DEFAULT_BALANCE_CAP),
    created: String(createdMs),
  }
  if (pol.v > 0) fields.policy_v = String(pol.v)
  if (pol.dailyCap !== null) fields.daily_cap = String(pol.dailyCap)
  if (pol.allow !== null) fields.allow = pol.allow
  if (pol.thresholds !== null) fields.thresholds = pol.thresholds
  // The referral bonus is still owed when the account was referred and no bonus entry exists.
  if (referrer && !led.lines.some((l) => l.id === `${account}:referral:referred`)) fields.referrer = referrer
  // The metered micro-credit remainder (docs/api.md §7) as the newest settle left it: the next settle
  // goes on from it, so a rebuild neither forgives nor charges a fraction twice.
  const remainder = lastRemainder(led)
  if (remainder > 0) fields.mc_rem = String(remainder)

  return {
    account,
    balance: led.sum,
    spentToday: spentToday(led, day),
    fields,
    email,
    publicRef,
    ownerTokenHash: owner,
    agents: [...byAgent.values()],
    proposals: await planProposals(ctx, db, account),
    charges: chargeRecords(led, parkedRows, ctx.clock.now()),
    // refund_unknown too: still the founder's to settle (reject again), never to approve.
    parked: parkedRows.filter((p) => p.state === 'parked' || p.state === 'refund_unknown'),
    reversals: reversalRecords(led),
    ledger: { entries: led.lines.length, postgres: led.postgres.count, outbox: led.outbox.count },
  }
}

export interface RebuildResult {
  account: string
  restored: boolean
  /** The balance now in Redis (the restored one, or the one left alone). */
  balance: number
  /** When left alone: the balance the ledger says it should be. */
  expected: number
}

/**
 * Writes the plan. An account hash that still exists is left alone (restored: false) unless
 * `force`; its agents are then left alone too, and only its missing lookups are written back.
 */
export async function applyRebuild(ctx: RedisContext, plan: RebuildPlan, opt: { force?: boolean } = {}): Promise<RebuildResult> {
  const { keys, redis } = ctx
  const acct = plan.account
  const day = hktDay(ctx.clock.now())
  // The consent page ref is not kept in Postgres: keep the one Redis still has, else a new one.
  const mref = (await readAccount(ctx, acct, 'mref')).mref ?? 'mr_' + randomId()
  const reply = await runRestoreAccount(ctx, {
    accountId: acct,
    day,
    force: opt.force ?? false,
    balance: plan.balance,
    spentToday: plan.spentToday,
    dayKeyTtlS: DAY_KEY_TTL_S,
    fields: { ...plan.fields, mref },
  })
  if (reply.status === 'already_applied') {
    await restoreLookups(ctx, acct)
    return { account: acct, restored: false, balance: reply.balance, expected: plan.balance }
  }

  for (const a of plan.agents) {
    const hash: Fields = { [LAYOUT_FIELD]: LAYOUT_VALUE, token: a.tokenHash, name: a.name, state: a.state, created: String(a.createdMs), v: String(a.version) }
    if (a.dailyCap !== null) hash.daily_cap = String(a.dailyCap)
    if (a.allow !== null) hash.allow = a.allow
    if (a.perCallMax !== null) hash.per_call_max = String(a.perCallMax)
    hash.depth = String(a.depth)
    hash.spent_total = String(a.spentTotal)
    if (a.carved > 0) hash.carved = String(a.carved)
    if (a.carveFreed) hash.carve_freed = '1'
    // Today's spend of the agent and its subtree, in the hash as debit.lua keeps it.
    if (a.spentToday > 0) Object.assign(hash, { day: String(day), day_spent: String(a.spentToday) })
    if (a.budget !== null) hash.budget = String(a.budget)
    if (a.expires !== null) hash.expires = String(a.expires)
    if (a.parent !== null) {
      hash.parent = a.parent
      hash.chain = a.chain.join(',')
    }
    await redis.multi().del(keys.agent(acct, a.id)).hset(keys.agent(acct, a.id), hash).sadd(keys.agents(acct), a.id).exec()
    await redis.set(keys.token(a.tokenHash), tokenMapping(acct, a.id, a.chain))
  }
  // The live agents the agent limit counts, from the hashes just written, by the rule create-agent.lua
  // and agent-state.lua keep (lua/lib/live-agents.lua): a set left from before is replaced.
  await runRecountAgents(ctx, acct, { now: ctx.clock.now(), replace: true })
  await restoreProposals(ctx, acct, plan.proposals)
  // Money paid in that only Redis held: the charge records, and the parked payments awaiting the
  // founder as credit-topup.lua parked them. A parked hash Redis still holds (--force) may carry a
  // decision not yet flushed: it is left alone.
  const shard = keys.shardOf(acct)
  const parked = []
  for (const p of plan.parked) if ((await redis.exists(keys.parked(shard, p.id))) === 0) parked.push(p)
  if (plan.charges.length > 0 || parked.length > 0 || plan.reversals.length > 0) {
    const m = redis.multi()
    for (const c of plan.charges) {
      const key = keys.charge(acct, c.charge)
      m.del(key).hset(key, c.parked === null ? { state: 'credited', credits: String(c.credits) } : { state: 'parked', parked: c.parked }).expire(key, c.ttlS)
    }
    for (const r of plan.reversals) {
      const key = keys.reversal(acct, r.charge)
      m.del(key).hset(key, { refund: String(r.refund), dispute: String(r.dispute) })
    }
    for (const p of parked) {
      const at = p.createdAt.getTime()
      m.hset(keys.parked(shard, p.id), { acct, charge: p.chargeId, credits: String(p.credits), kind: p.kind, gateway: p.gateway, state: p.state, at: String(at) })
      m.zadd(keys.parkedQueue(shard), at, p.id)
    }
    await m.exec()
  }
  await Promise.all([
    redis.set(keys.token(plan.ownerTokenHash), `${acct}|`),
    redis.set(keys.email(plan.email), acct),
    redis.set(keys.publicRef(plan.publicRef), acct),
    redis.set(keys.mandateRef(mref), acct),
  ])
  return { account: acct, restored: true, balance: plan.balance, expected: plan.balance }
}

/**
 * The global lookups (owner and agent tokens, e-mail, public_ref, consent ref) of an account whose
 * hash Redis still holds, from that hash and its agents' hashes, each written only where missing. On
 * Redis Cluster they hash to any master, not the account's: a master that lost its data took lookups
 * of accounts whose hashes the other masters kept (test/cluster/rebuild.audit.test.ts).
 */
export async function restoreLookups(ctx: RedisContext, acct: string): Promise<void> {
  const { keys, redis } = ctx
  const [a, ids] = await Promise.all([readAccount(ctx, acct, 'owner', 'email', 'public_ref', 'mref'), redis.smembers(keys.agents(acct))])
  const agents = await Promise.all(ids.map((id) => redis.hmget(keys.agent(acct, id), 'token', 'chain')))
  await Promise.all([
    a.owner && redis.set(keys.token(a.owner), `${acct}|`, 'NX'),
    a.email && redis.set(keys.email(a.email), acct, 'NX'),
    a.public_ref && redis.set(keys.publicRef(a.public_ref), acct, 'NX'),
    a.mref && redis.set(keys.mandateRef(a.mref), acct, 'NX'),
    ...agents.map(([token, chain], i) => token && redis.set(keys.token(token), tokenMapping(acct, ids[i]!, chain ? chain.split(',') : []), 'NX')),
  ])
}

/** Every account Postgres knows, plus those created since the last flush (still in the outbox). */
export async function allAccountIds(ctx: RedisContext, db: Database): Promise<string[]> {
  const rows = await db.select({ id: accounts.id }).from(accounts).orderBy(accounts.id)
  const ids = new Set(rows.map((r) => r.id))
  for (let s = 0; s < SHARDS; s++) for await (const e of scanOutbox(ctx, s)) if (e.kind === 'account') ids.add(accountFields(e).account)
  return [...ids]
}

export interface RestoreSummary {
  restored: number
  /** Accounts whose hash Redis still holds: left alone (the operator's `ledger:rebuild` reports drift). */
  present: number
  failed: { account: string; error: string }[]
}

/** Accounts planned and written at once: enough to hide Postgres round trips, few enough to share it. */
const RESTORE_CONCURRENCY = 8

/**
 * Restores every account Redis lacks (the automatic rebuild after Redis came back empty). Safe to
 * run again and from several processes: restore-account.lua writes a hash only where none exists.
 */
export async function restoreMissing(ctx: RedisContext, db: Database): Promise<RestoreSummary> {
  await advanceOutboxes(ctx, db)
  const ids = await allAccountIds(ctx, db)
  const out: RestoreSummary = { restored: 0, present: 0, failed: [] }
  let next = 0
  const worker = async () => {
    while (next < ids.length) {
      const id = ids[next++]!
      try {
        if ((await ctx.redis.exists(ctx.keys.account(id))) === 1) {
          await restoreLookups(ctx, id)
          out.present++
          continue
        }
        const r = await applyRebuild(ctx, await planRebuild(ctx, db, id))
        if (r.restored) out.restored++
        else out.present++
      } catch (e) {
        out.failed.push({ account: id, error: e instanceof Error ? e.message : String(e) })
      }
    }
  }
  await Promise.all(Array.from({ length: RESTORE_CONCURRENCY }, worker))
  return out
}
