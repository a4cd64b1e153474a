/**
 * debit.lua, the one money decision of a paid request: its KEYS and ARGV built from named
 * arguments, its tuples (see the Lua header) decoded into a DebitReply.
 */
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import { refusalOf, type Refusal } from './refusal'
import { num, statusOf, str, unexpected } from './reply'

export interface DebitArgs {
  now: number
  accountId: string
  agentId: string | null
  tokenHash: string
  /** Capability slug or `proxy:<provider>`. */
  target: string
  price: number
  unpriced: boolean
  callId: string
  /** The HKT day and the current / previous minute windows of `now` (ledger/windows.ts). */
  day: number
  rateWindow: number
  prevRateWindow: number
  rateLimit: number
  defaultDailyCap: number
  unpricedRequestCap: number
  idempotency?: { key: string; fingerprint: string }
  /** Identical-requests fingerprint for the breaker, when the body is at hand. */
  fingerprint?: string
  dayKeyTtlS: number
  breakerCreditsPerMinute: number
  breakerIdenticalPerMinute: number
  lowBalanceAlert: number
  abandonAt: number
  /** A metered request (docs/api.md §7): the reservation is computed, and clamped, by the script. */
  metered?: DebitMetering
  /** A sub-agent's ancestors, parent first (at most 3; docs/api.md §8): every one is checked and charged. */
  chain?: readonly string[]
  /** The run budget the call names (docs/api.md §13c): checked and charged as one more level of the chain. */
  run?: DebitRun
}

/** A run budget as the call names it: `max` and `ttlS` count only when this call opens the run. */
export interface DebitRun {
  id: string
  max: number
  ttlS: number
  /** How long the run's record is kept past its end, so that it can still be listed. */
  keptS: number
}

/** The run after an admitted debit: its spend (this call's price included), max and end (epoch ms). */
export interface RunState {
  id: string
  max: number
  spent: number
  expiresAt: number
}

/** What debit.lua needs to reserve a metered request: the model's prices and the request's bounds. */
export interface DebitMetering {
  model: string
  /** Never below the true input token count. */
  inputBound: number
  /** Credits per 1,000,000 tokens. */
  input: number
  cachedInput: number
  /** The price each input token of the bound is reserved at (request.ts inputBoundPrice); absent: `input`. */
  boundInput?: number
  /** Cache writes, 5-minute and 1-hour lifetimes (Anthropic); absent: `input`. */
  cacheWrite?: number
  cacheWrite1h?: number
  output: number
  /** The ceiling the request names, or null: then the script picks it (max_output or a clamp). */
  ceiling: number | null
  maxOutput: number
  minOutput: number
  /**
   * The owner's lane (docs/api.md §12): the percent of the exact cost charged, 0..100; absent on
   * the house lane (the whole cost). Reserved as that percent of the house-lane reservation.
   */
  feePct?: number
}

export type DebitReply =
  | {
      status: 'ok'
      balance: number
      referrerId: string | null
      spentToday: number
      refillDue: boolean
      /** The credits debited: the price, or a metered request's reservation. */
      price: number
      /** Metered: the output ceiling reserved (0 when flat), and whether the script picked it lower than max_output. */
      maxOut: number
      clamped: boolean
      /** Present when the call named a run (absent on a resent call id's answer). */
      run?: RunState
    }
  | { status: 'replay'; response: string }
  | { status: 'insufficient_balance'; balance: number; price: number; refillDue: boolean; mandateRef: string; affordableMaxTokens: number }
  | Refusal
  | { status: 'run_budget'; runId: string; reason: 'exhausted' | 'ended' | 'other_agent'; max: number; spent: number; expiresAt: number }

/**
 * KEYS[13..15]: the ancestors' hashes (each carries its day spend). A slot past the chain repeats
 * the agent's own key (same hash slot, never read), so the key count is fixed and the script runs
 * unchanged on Redis Cluster.
 */
function chainKeys(a: DebitArgs, keys: RedisContext['keys'], agentKey: string): string[] {
  const chain = a.chain ?? []
  if (chain.length > 3) throw new Error(`debit: a chain of ${chain.length} ancestors`)
  // The common call has no ancestors: the filler keys are the one already built, not three new strings.
  if (chain.length === 0) return [agentKey, agentKey, agentKey]
  return [0, 1, 2].map((i) => (chain[i] ? keys.agent(a.accountId, chain[i]!) : agentKey))
}

/**
 * The keys every debit of one token shares within one rate window: KEYS[1..6] and [8..9], the
 * breaker's [11..12] and the chain's [13..15]. Built once a window and reused: a batch's calls then
 * hold the same strings, which the batch wrapper compares and ioredis encodes without building
 * (and flattening) a dozen template strings a call.
 */
interface TokenKeys {
  /** What they were built of: the token's own (fixed for a token) and the windows. */
  accountId: string
  agentId: string | null
  chainOf: readonly string[] | undefined
  day: number
  window: number
  prevWindow: number
  account: string
  agent: string
  head: string[]
  breaker: [string, string]
  chain: string[]
}

/** Per key layout (a Redis context's prefix), by token hash; dropped whole past MAX_TOKEN_KEYS. */
const tokenKeys = new WeakMap<RedisContext['keys'], Map<string, TokenKeys>>()
const MAX_TOKEN_KEYS = 10_000

function keysOfToken(keys: RedisContext['keys'], a: DebitArgs): TokenKeys {
  let byToken = tokenKeys.get(keys)
  if (!byToken) tokenKeys.set(keys, (byToken = new Map()))
  const hit = byToken.get(a.tokenHash)
  if (hit && hit.day === a.day && hit.window === a.rateWindow && hit.prevWindow === a.prevRateWindow && sameToken(hit, a)) return hit
  if (byToken.size >= MAX_TOKEN_KEYS) byToken.clear()
  const acct = a.accountId
  const agent = keys.agent(acct, a.agentId)
  const shard = keys.shardOf(acct)
  const made: TokenKeys = {
    accountId: acct,
    agentId: a.agentId,
    chainOf: a.chain,
    day: a.day,
    window: a.rateWindow,
    prevWindow: a.prevRateWindow,
    account: keys.account(acct),
    agent,
    head: [keys.spentToday(acct, a.day), keys.unpricedRequestsToday(acct, a.day), keys.rateWindow(acct, a.agentId, a.rateWindow), keys.rateWindow(acct, a.agentId, a.prevRateWindow), keys.outbox(shard), keys.inflight(shard)],
    breaker: a.agentId === null ? [agent, agent] : [keys.breakerWindow(acct, a.agentId, a.rateWindow), keys.breakerWindow(acct, a.agentId, a.prevRateWindow)],
    // Always three (chainKeys): KEYS[13..15].
    chain: chainKeys(a, keys, agent),
  }
  byToken.set(a.tokenHash, made)
  return made
}

/** A token's account, agent and chain never change (the principal is cached); checked all the same, by identity first. */
function sameToken(k: TokenKeys, a: DebitArgs): boolean {
  if (k.accountId !== a.accountId || k.agentId !== a.agentId) return false
  if (k.chainOf === a.chain) return true
  const x = k.chainOf ?? [], y = a.chain ?? []
  return x.length === y.length && x.every((v, i) => v === y[i])
}

export async function runDebit(ctx: RedisContext, a: DebitArgs): Promise<DebitReply> {
  const { keys } = ctx
  const acct = a.accountId
  const shared = keysOfToken(keys, a)
  const agentKey = shared.agent
  const [spent, unpriced, rate, prevRate, outbox, inflight] = shared.head
  // Slots a call does not use repeat the agent's key (KEYS[10..17], debit.lua): sent alone, the
  // call leaves them out at the end (src/redis/scripts.ts).
  const owner = a.agentId === null
  const idem = a.idempotency
  // A flat call's price is written as sent (debit.lua's price_s): an integer numeral, never '5.5' or '1e+21'.
  if (!Number.isSafeInteger(a.price) || a.price < 0) throw new Error(`debit: price ${a.price} is not an integer >= 0`)
  const argv: (string | number)[] = [
    a.now,
    a.tokenHash,
    a.agentId ?? '',
    a.target,
    a.price,
    a.unpriced ? '1' : '0',
    a.callId,
    a.rateLimit,
    a.defaultDailyCap,
    a.dayKeyTtlS,
    acct,
    a.lowBalanceAlert,
    a.abandonAt,
    // ARGV[14..19]: only an agent weighs its breaker, only an unpriced route its request cap.
    owner ? '' : (a.fingerprint ?? ''),
    owner ? '' : a.breakerCreditsPerMinute,
    owner ? '' : a.breakerIdenticalPerMinute,
    a.unpriced ? a.unpricedRequestCap : '',
    idem?.fingerprint ?? '',
    idem?.key ?? '',
  ]
  // Pushed, not spread: an array spread goes through the iterator protocol (seen in the profile).
  for (const v of tailArgs(a)) argv.push(v)
  // Absent reads as '' (debit.lua): each argument left out is one Redis need not parse.
  while (argv.length > 13 && argv[argv.length - 1] === '') argv.pop()
  const reply = await ctx.scripts.debit(
    [
      shared.account,
      agentKey,
      spent!,
      unpriced!,
      rate!,
      prevRate!,
      keys.call(acct, a.callId),
      outbox!,
      inflight!,
      idem ? keys.idempotency(acct, a.agentId, idem.key) : agentKey,
      shared.breaker[0],
      shared.breaker[1],
      shared.chain[0]!,
      shared.chain[1]!,
      shared.chain[2]!,
      // KEYS[16..17]: the run and the account's runs, or the agent's key again: never read then.
      a.run ? keys.run(acct, a.run.id) : agentKey,
      a.run ? keys.runs(acct) : agentKey,
    ],
    argv,
  )
  switch (statusOf(reply)) {
    case S.OK: {
      const ok: Extract<DebitReply, { status: 'ok' }> = {
        status: 'ok',
        balance: num(reply, 1),
        referrerId: str(reply, 2) || null,
        spentToday: num(reply, 3),
        refillDue: num(reply, 4) === 1,
        price: num(reply, 5),
        maxOut: num(reply, 6),
        clamped: num(reply, 7) === 1,
      }
      if (a.run && reply.length > 8) ok.run = { id: a.run.id, spent: num(reply, 8), max: num(reply, 9), expiresAt: num(reply, 10) }
      return ok
    }
    case S.REPLAY:
      return { status: 'replay', response: str(reply, 2) }
    case S.INSUFFICIENT_BALANCE:
      return { status: 'insufficient_balance', balance: num(reply, 1), price: num(reply, 2), refillDue: num(reply, 3) === 1, mandateRef: str(reply, 4), affordableMaxTokens: num(reply, 5) }
    case S.DENIED_RUN_BUDGET:
      return { status: 'run_budget', runId: a.run?.id ?? '', max: num(reply, 2), spent: num(reply, 3), reason: str(reply, 4) as 'exhausted' | 'ended' | 'other_agent', expiresAt: num(reply, 5) }
  }
  const refusal = refusalOf(reply)
  if (!refusal) throw unexpected('debit.lua', reply)
  return refusal
}

/**
 * ARGV[20..23]: the chain (20) and the metering (21..23). A flat call sends only what it has: none of
 * them without ancestors (the common call), the chain alone with them (the script reads the absent
 * ones as ''): each argument costs ioredis an encoding per call and Redis ~1,000 instructions. A
 * metered call sends what its model always has as one argument (meterSpec), which a batch parses
 * once, then its input bound and its ceiling.
 */
function tailArgs(a: DebitArgs): (string | number)[] {
  const chain = (a.chain ?? []).join(',')
  const m = a.metered
  if (!m) return a.run ? [chain, '', '', '', ...runArgs(a.run)] : chain === '' ? [] : [chain]
  const args = [chain, meterSpec(m), m.inputBound, m.ceiling ?? '']
  if (a.run) args.push(...runArgs(a.run))
  return args
}

/**
 * ARGV[21] (lua/debit.lua): p_in|p_cached|p_out|max_output|min_output|p_bound|p_cw|p_cw1h|fee|model.
 * A model whose input tokens all cost the input price (every OpenAI one) leaves p_bound, p_cw and
 * p_cw1h '' on the house lane; the owner's lane names them all and its fee percent. The model last,
 * as it may hold a '|'.
 */
function meterSpec(m: DebitMetering): string {
  const [bound, write, write1h] = [m.boundInput ?? m.input, m.cacheWrite ?? m.input, m.cacheWrite1h ?? m.input]
  const all = bound !== m.input || write !== m.input || write1h !== m.input || m.feePct !== undefined
  return `${m.input}|${m.cachedInput}|${m.output}|${m.maxOutput}|${m.minOutput}|${all ? `${bound}|${write}|${write1h}` : '||'}|${m.feePct ?? ''}|${m.model}`
}

/** ARGV[24..27]: a run's id, max, TTL and keep (ms), after ARGV[20..23] sent whole ('' where absent). */
function runArgs(r: DebitRun): (string | number)[] {
  return [r.id, r.max, r.ttlS * 1000, r.keptS * 1000]
}
