/**
 * A paid request between its debit and its end: TigerBeetle's pending transfer. It is reserved by
 * the debit (debit.lua) and ends in exactly one way, `settle(outcome)`: refunded (refund.lua) or kept,
 * filed for activity (record-calls.lua; settle.lua files a metered call without an Idempotency-Key
 * itself), the referral bonus on the first `ok`, the in-flight lease released. A second settle
 * changes nothing and answers what the first did. A request that dies without settling is refunded
 * by the sweeper at its deadline (sweeper.ts).
 * errors / metrics: a settle whose refund fails (Redis down) rejects, and the sweeper refunds the
 * call at its deadline; a failed filing or bonus is logged and never fails the request.
 */
import type { Principal } from '../auth/principal'
import { isoInstants } from '../clock'
import type { Log } from '../log'
import type { RedisContext } from '../redis/context'
import { runSettle } from '../lua/settle'
import type { RunState } from '../lua/debit'
import type { MeteredUsage } from '../metering/usage'
import { applyReferralBonus } from '../ledger/accounts'
import { filedAs, recordCall, settleFiling, type CallLane, type CallRecord } from './calls'
import { refund } from './refund'
import { isRefunded, type CallOutcome } from './outcome'

/** What the request knows when it ends. */
export interface SettleFacts {
  /**
   * A metered call's usage (docs/api.md §7): what a charged ending is charged for (settle.lua). Without
   * it a metered call is charged nothing past its micro-credit remainder (zero tokens, estimated).
   */
  usage?: MeteredUsage
  /** The provider's HTTP status, when it answered. */
  httpStatus?: number | null
  /**
   * The answer an Idempotency-Key replay gets, built from the balance after the settlement (a
   * charged call that carries a key). Stored before settle resolves, so a replay can never miss it.
   */
  replay?: (balance: number, charged: number) => string
}

export interface Settlement {
  outcome: CallOutcome
  refunded: boolean
  /** After the refund or the referral bonus; the debit's own when neither moved it. */
  balance: number
  /** The stored replay answer, when `facts.replay` was given and the call was charged. */
  replay?: string
  /** The credits the call kept: the flat price, a metered call's charge, 0 when refunded. */
  charged: number
}

/** A metered call's reservation, as the debit made it. */
export interface MeteredReservation {
  model: string
  inputBound: number
  /** The output ceiling reserved, and whether the debit chose it below the model's max_output. */
  maxOut: number
  clamped: boolean
}

export interface DebitedCallInit {
  principal: Principal
  /** Capability slug or `proxy:<provider>`, as debited. */
  target: string
  price: number
  callId: string
  /** Right after the debit. */
  balance: number
  /** The referrer while the referral bonus is still owed (debit.lua reads it with the debit). */
  referrerId: string | null
  /** HKT day and instant of the debit: a refund lowers that day's spend. */
  day: number
  at: number
  idempotencyKey?: string
  /** Stops renewing the call's in-flight lease, if it holds one. */
  releaseLease: () => void
  /** Set when the call is charged by its tokens: `price` is then the reservation. */
  metered?: MeteredReservation
  /** The key the request goes out with, when known at the debit (filed with the call: docs/api.md §13d). */
  lane?: CallLane
  /** The run budget the call counts against (docs/api.md §13c), as its debit left it. */
  run?: RunState
  /**
   * The run the call record names, for its refund or settle: the one the call asked for (a debit
   * resent after a lost reply answers without the run's state, yet its record names the run).
   */
  runId?: string
}

export class DebitedCall {
  private settled: Promise<Settlement> | null = null
  private readonly started = performance.now()

  constructor(
    private readonly deps: { ctx: RedisContext; log: Log },
    private readonly d: DebitedCallInit,
  ) {}

  get callId(): string {
    return this.d.callId
  }

  get price(): number {
    return this.d.price
  }

  /** The reservation of a metered call (its `price` is what was reserved), or undefined when flat. */
  get metered(): MeteredReservation | undefined {
    return this.d.metered
  }

  /** The run the call counts against, right after its debit (its spend includes this call's price). */
  get runState(): RunState | undefined {
    return this.d.run
  }

  /** The balance right after the debit, before any settlement. */
  get balance(): number {
    return this.d.balance
  }

  /** Ends the call, once: every later call answers the first one's settlement. */
  settle(outcome: CallOutcome, facts: SettleFacts = {}): Promise<Settlement> {
    return (this.settled ??= this.run(outcome, facts))
  }

  /**
   * Settles as settle() does, but answers as soon as the settle is ordered rather than applied: for
   * a metered call that kept its charge, once settle.lua is in its batch, which goes to the Redis
   * connection before the event loop next handles a request (TurnBatch); for every other ending (a
   * refund, a flat call), once settled. Used by the proxy to end a metered answer without waiting
   * for the settle's round trip (docs/decisions.md, issue 14, fourteenth and seventeenth rounds):
   * any command this instance sends later (the client's next request, a balance read) runs after
   * the settle, and a reader elsewhere that comes first sees the reservation still held, never
   * more money than there is. In the common case (the agent's chain cached) the answer's end
   * goes out in the same turn as its last bytes: one write to the client, not two. A settle that
   * then fails goes to `failed`; the call is left to the sweeper, as after a crash.
   */
  settleQueued(outcome: CallOutcome, facts: SettleFacts, failed: (e: unknown) => void): Promise<void> {
    let queued!: () => void
    const ordered = new Promise<void>((resolve) => (queued = resolve))
    const settled = (this.settled ??= this.run(outcome, facts, queued))
    settled.catch(failed)
    return Promise.race([ordered, settled.then(() => undefined, () => undefined)])
  }

  /**
   * The provider key, read only now that the debit has answered agent state, the rate limit and the
   * balance (a refused token never reaches the vault). Without one the call settles as `no_key`
   * and the lookup's own error passes on.
   */
  async keyOrVoid<K>(lookup: () => Promise<K>): Promise<K> {
    try {
      return await lookup()
    } catch (e) {
      await this.settle('no_key').catch((err) => this.deps.log.error('void_debit_failed', { call_id: this.d.callId, error: String(err) }))
      throw e
    }
  }

  /**
   * Lets go of the lease without settling, after an error nobody planned for: the sweeper refunds
   * the call one lease later, as it would after a crash. A settled call is unaffected.
   */
  leaveToSweeper(): void {
    this.d.releaseLease()
  }

  /** `queued`: called once a metered settle is queued on the connection (settleQueued). */
  private async run(outcome: CallOutcome, facts: SettleFacts, queued?: () => void): Promise<Settlement> {
    const { ctx, log } = this.deps
    const d = this.d
    const { accountId, agentId } = d.principal
    d.releaseLease()
    const refunded = isRefunded(outcome)
    let balance = d.balance
    let charged = refunded ? 0 : d.price
    let metered: Pick<CallRecord, 'model' | 'tokens' | 'reserved' | 'uncharged' | 'usage_source'> = {}
    // A metered request is filed under its route, its model and reservation apart (calls.ts).
    const filing = filedAs(d.target, d.metered ? { model: d.metered.model, reserved: d.price } : null)
    const base: Omit<CallRecord, 'charged'> = {
      call_id: d.callId,
      slug: filing.slug,
      agent_id: agentId,
      refunded,
      outcome,
      http_status: facts.httpStatus ?? null,
      latency_ms: Math.round(performance.now() - this.started),
      at: isoInstant(d.at),
    }
    if (d.lane) base.lane = d.lane
    let filed = false
    if (refunded) {
      balance = (await refund(ctx, { accountId, agentId, callId: d.callId, day: d.day, at: d.at, reason: outcome, runId: d.runId })).balance
    } else if (d.metered) {
      const usage = facts.usage ?? { tokens: { input: 0, cached: 0, output: 0 }, source: 'estimated' as const }
      // Without an Idempotency-Key nothing filed depends on the balance after the settle: settle.lua
      // files the call in the same script (one script after the upstream, not two).
      const file =
        d.idempotencyKey === undefined
          ? settleFiling(accountId, { ...base, model: d.metered.model, reserved: d.price, tokens: usage.tokens, usage_source: usage.source })
          : undefined
      const r = await runSettle(ctx, { now: ctx.clock.now(), accountId, agentId, callId: d.callId, day: d.day, at: d.at, tokens: usage.tokens, source: usage.source, file, onQueued: queued, runId: d.runId })
      // already_applied: the sweeper refunded it first (its lease lapsed); that answer stands.
      charged = r.status === 'ok' ? r.charged : 0
      if (r.status === 'ok') balance = r.balance
      filed = r.status === 'ok' && file !== undefined
      metered = { tokens: usage.tokens, usage_source: usage.source, uncharged: r.status === 'ok' ? Math.ceil(r.unchargedMicro / 1e6) : 0 }
    }
    if (!refunded && outcome === 'ok' && d.referrerId) {
      // Awaited on every path: the paid call's answer shows the balance with the bonus in it.
      const after = await applyReferralBonus(ctx, accountId, d.referrerId, d.callId).catch((e) => {
        log.error('referral_bonus_failed', { call_id: d.callId, error: String(e) })
        return null
      })
      balance = after ?? balance
    }
    const replay = !refunded && facts.replay ? facts.replay(balance, charged) : undefined
    if (filed) return { outcome, refunded, balance, replay, charged }
    // The record is `base` itself, its members in the order the spreads {...base, charged, ...filing,
    // ...metered} gave them: a flat call's filing only repeats its slug, and it has no metered part.
    const rec = base as CallRecord
    rec.charged = refunded ? d.price : charged
    if (d.metered) Object.assign(rec, filing, metered)
    const recorded = recordCall(ctx, accountId, rec, { idempotencyKey: d.idempotencyKey, replay })
    // An Idempotency-Key's answer (stored, or the key released for a retry) must exist before the
    // client can send the key again; without a key, filing the metadata never delays the answer.
    if (d.idempotencyKey !== undefined) await recorded
    else void recorded.catch((e) => log.error('record_call_failed', { call_id: d.callId, error: String(e) }))
    return { outcome, refunded, balance, replay, charged }
  }
}

/** An instant as the call record writes it: the calls of one turn mostly share their debit's millisecond. */
const isoInstant = isoInstants()
