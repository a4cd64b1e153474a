/**
 * The write-behind flusher: moves outbox entries (one Redis Stream per shard) into Postgres.
 *
 * - Reads with a consumer group; an entry is XACKed (and trimmed away, ack-outbox.lua) only after the
 *   Postgres transaction holding it committed. A crash between commit and ack redelivers the entry,
 *   and the unique entry id turns the second insert into a no-op: nothing is lost, nothing doubled.
 * - Postgres down never blocks calls: entries simply wait in the stream; this loop retries with
 *   backoff and drains the backlog once Postgres answers again.
 * - Entries left pending by a dead consumer are reclaimed (XAUTOCLAIM) after `staleMs`.
 * - A bad entry never stops the rest (src/ledger/poison.ts): a round is one transaction while it
 *   succeeds; when Postgres refuses it for a reason other than being unreachable, each shard is
 *   retried on its own and a failing batch is halved until the entry Postgres refuses alone is
 *   found. That entry goes to the shard's dead letters (src/ledger/dead-letters.ts); the others
 *   commit. Postgres down dead-letters nothing: the round is retried with back-off.
 * errors / metrics: `stats()` reports batches, entries, failures, dead letters and the last error;
 * `lag()` the unflushed entry count and the age of the oldest one.
 */
import { hostname } from 'node:os'
import { randomId } from '../auth/tokens'
import type { Database } from '../db/client'
import { SHARDS } from '../redis/keys'
import type { RedisContext } from '../redis/context'
import { runAckOutbox } from '../lua/ack-outbox'
import { buryEntry, countDeadLetters } from './dead-letters'
import { readOutboxGroup, type OutboxEntry } from './outbox'
import { classifyFlushError, describeFlushError, PoisonEntry } from './poison'
import { sinkOf } from './sink-registry'

const GROUP = 'flusher'
const MAX_BACKOFF_MS = 5_000

/** Every shard's outbox stream with the flusher's consumer group (the stream made if missing). */
export async function ensureOutboxGroups(ctx: RedisContext): Promise<void> {
  await Promise.all(
    Array.from({ length: SHARDS }, async (_, s) => {
      try {
        await ctx.redis.xgroup('CREATE', ctx.keys.outbox(s), GROUP, '0', 'MKSTREAM')
      } catch (e) {
        if (!String(e).includes('BUSYGROUP')) throw e
      }
    }),
  )
}

export type FlushObserver = (entries: OutboxEntry[]) => Promise<void>

export interface FlusherOptions {
  batch: number
  intervalMs: number
  /** Entries pending this long on another consumer are taken over (it is presumed dead). */
  staleMs?: number
  onError?: (err: unknown) => void
  /** An entry Postgres refused alone was moved to the dead letters. */
  onDeadLetter?: (d: { shard: number; streamId: string; kind: string; error: string }) => void
}

export class Flusher {
  readonly consumer = `${hostname()}-${process.pid}-${randomId(4)}`
  private running = false
  private loop: Promise<void> | null = null
  private lastReclaim = 0
  /** Whether the last round left entries behind (a shard returned a full batch). */
  private backlogged = false
  /** Per shard: whether this consumer's pending list may hold entries (true at start-up). */
  private pendingMayExist: boolean[] = Array.from({ length: SHARDS }, () => true)
  /**
   * After a reconnect the pending lists may hold entries no round saw: ioredis resends a read whose
   * reply the dropped connection lost, and the resent read delivers new entries while the first
   * read's stay pending (its effect survives a restart on the AOF) — left, they would wait for the
   * reclaim of entries idle past staleMs, and the outbox could not be trimmed past them.
   */
  private readonly onReconnect = () => this.pendingMayExist.fill(true)
  private listening = false
  private wake: (() => void) | null = null
  private observers: FlushObserver[] = []
  private counters = { batches: 0, entries: 0, failures: 0, deadLettered: 0, lastError: null as string | null, lastFlushAt: 0 }

  constructor(
    private ctx: RedisContext,
    private db: Database,
    private opt: FlusherOptions,
  ) {}

  private get staleMs(): number {
    return this.opt.staleMs ?? 30_000
  }

  private stream(shard: number): string {
    return this.ctx.keys.outbox(shard)
  }

  ensureGroups(): Promise<void> {
    return ensureOutboxGroups(this.ctx)
  }

  start(): void {
    if (this.running) return
    this.running = true
    this.loop = this.run()
  }

  /** Stops the loop, then drains what is left for at most `timeoutMs`. */
  async stop(timeoutMs = 5_000): Promise<void> {
    this.running = false
    this.wake?.()
    await this.loop
    const deadline = Date.now() + timeoutMs
    try {
      while (Date.now() < deadline) {
        try {
          if ((await this.flushOnce()) === 0) return
        } catch {
          return
        }
      }
    } finally {
      this.ctx.redis.off('ready', this.onReconnect)
      this.listening = false
    }
  }

  private async run(): Promise<void> {
    let backoff = this.opt.intervalMs
    await this.ensureGroups().catch((e) => this.fail(e))
    while (this.running) {
      try {
        await this.flushOnce()
        backoff = this.opt.intervalMs
      } catch (e) {
        this.backlogged = false
        this.fail(e)
        backoff = Math.min(MAX_BACKOFF_MS, backoff * 2)
        // A Redis that came back empty (no persistence, or rebuilt) has lost the consumer groups.
        if (String(e).includes('NOGROUP')) await this.ensureGroups().catch((err) => this.fail(err))
      }
      // Only a backlog (some shard filled a whole batch) loops at once. Otherwise the loop waits a
      // round: under steady load the batches then grow, and the fixed cost of a round (a read per
      // shard, one transaction) is spread over many entries instead of a handful.
      if (!this.backlogged && this.running) await this.sleep(backoff)
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms)
      this.wake = () => {
        clearTimeout(t)
        resolve()
      }
    })
  }

  private fail(e: unknown): void {
    this.counters.failures++
    this.counters.lastError = e instanceof Error ? e.message : String(e)
    this.opt.onError?.(e)
  }

  /**
   * One round over every shard: read, write in one transaction, ack. Returns entries moved out of
   * the outbox (committed or dead-lettered). Throws when Postgres is unreachable, or after
   * committing the other shards when one shard's batch failed for a reason that is not its data.
   */
  async flushOnce(): Promise<number> {
    try {
      return await this.round()
    } catch (e) {
      // A round that failed anywhere may have left entries delivered to this consumer and not
      // acked: a read whose reply was lost, an ack sent while Redis restarted (its PEL survives on
      // the AOF). The next round reads this consumer's pending list first, instead of leaving them
      // to the reclaim of entries idle past staleMs (a 30–60 s stall of the ledger's lag).
      this.pendingMayExist.fill(true)
      throw e
    }
  }

  private async round(): Promise<number> {
    if (!this.listening) {
      this.listening = true
      this.ctx.redis.on('ready', this.onReconnect)
    }
    if (Date.now() - this.lastReclaim > this.staleMs) {
      this.lastReclaim = Date.now()
      await this.reclaimStale()
    }
    const reads = await Promise.all(Array.from({ length: SHARDS }, (_, s) => this.read(s)))
    const perShard = reads.map((r) => r.entries)
    this.backlogged = perShard.some((entries) => entries.length >= this.opt.batch)
    const all = perShard.flat()
    if (all.length === 0) return 0
    let committed = perShard
    let buried = 0
    let held: unknown = null
    try {
      // First deliveries only: the hot sinks skip their conflict check (a duplicate fails this
      // write, and the slow path below writes every shard again with it).
      await this.write(all, { fresh: !reads.some((r) => r.redelivered) })
    } catch (e) {
      perShard.forEach((entries, s) => entries.length > 0 && (this.pendingMayExist[s] = true))
      if (classifyFlushError(e) === 'down') throw e
      ;({ committed, buried, held } = await this.isolate(perShard))
    }
    const moved = await this.settle(committed)
    if (held) throw held
    return moved + buried
  }

  /** Acks what committed and hands it to the observers; returns how many entries that was. */
  private async settle(perShard: OutboxEntry[][]): Promise<number> {
    const all = perShard.flat()
    if (all.length === 0) return 0
    await Promise.all(
      perShard.map((entries, s) => {
        if (entries.length === 0) return null
        return runAckOutbox(this.ctx, { stream: this.stream(s), group: GROUP, ids: streamIdsOf(entries) })
      }),
    )
    this.counters.batches++
    this.counters.entries += all.length
    this.counters.lastFlushAt = Date.now()
    await this.notify(all)
    return all.length
  }

  /**
   * The slow path, after the round's one transaction failed while Postgres answered: each shard in
   * a transaction of its own, so one shard's bad entry holds up no other shard. Stops at the first
   * sign that Postgres went away (`held` is then that error, and nothing more is tried).
   */
  private async isolate(perShard: OutboxEntry[][]): Promise<{ committed: OutboxEntry[][]; buried: number; held: unknown }> {
    const committed = perShard.map(() => [] as OutboxEntry[])
    let buried = 0
    let held: unknown = null
    for (const [s, entries] of perShard.entries()) {
      if (entries.length === 0) continue
      try {
        buried += await this.bisect(s, entries, committed[s]!)
      } catch (e) {
        held = e
        if (classifyFlushError(e) === 'down') break
      }
    }
    return { committed, buried, held }
  }

  /**
   * Writes `entries` of one shard, halving a batch Postgres refuses for its data until the entry
   * it refuses alone is found and dead-lettered. Commits go into `out`; returns entries buried.
   * A poison entry costs about log2(batch) extra transactions; only its own shard pays them.
   */
  private async bisect(shard: number, entries: OutboxEntry[], out: OutboxEntry[]): Promise<number> {
    try {
      await this.write(entries)
      out.push(...entries)
      return 0
    } catch (e) {
      if (classifyFlushError(e) !== 'poison') throw e
      if (entries.length === 1) return this.bury(shard, entries[0]!, e)
      const mid = Math.ceil(entries.length / 2)
      return (await this.bisect(shard, entries.slice(0, mid), out)) + (await this.bisect(shard, entries.slice(mid), out))
    }
  }

  private async bury(shard: number, entry: OutboxEntry, e: unknown): Promise<number> {
    const error = describeFlushError(e)
    if (!(await buryEntry(this.ctx, shard, GROUP, entry.streamId, error))) return 0
    this.counters.deadLettered++
    this.opt.onDeadLetter?.({ shard, streamId: entry.streamId, kind: entry.kind, error })
    return 1
  }

  /**
   * Registers a consumer of every committed batch (the spend alarm aggregates here, so the paid
   * call path pays nothing for it). Called after the ack: an entry is observed at most once, and a
   * dead-lettered entry is never observed (until a replay commits it).
   */
  observe(fn: FlushObserver): void {
    this.observers.push(fn)
  }

  private async notify(entries: OutboxEntry[]): Promise<void> {
    for (const fn of this.observers) await fn(entries).catch((e) => this.opt.onError?.(e))
  }

  /**
   * This consumer's unacked entries first (a failed commit, a reclaim or a restart leaves them
   * there), else new ones. The pending list is only read while it may hold something, so a healthy
   * round costs one XREADGROUP per shard.
   */
  private async read(shard: number): Promise<{ entries: OutboxEntry[]; redelivered: boolean }> {
    const key = this.stream(shard)
    if (this.pendingMayExist[shard]) {
      const rows = await this.readFrom(key, '0')
      if (rows.length > 0) return { entries: rows, redelivered: true }
      this.pendingMayExist[shard] = false
    }
    return { entries: await this.readFrom(key, '>'), redelivered: false }
  }

  private async readFrom(key: string, from: '0' | '>'): Promise<OutboxEntry[]> {
    return readOutboxGroup(this.ctx, key, GROUP, this.consumer, this.opt.batch, from)
  }

  private async write(entries: OutboxEntry[], o: { fresh?: boolean } = {}): Promise<void> {
    const byKind = new Map<string, OutboxEntry[]>()
    for (const e of entries) {
      const list = byKind.get(e.kind) ?? []
      list.push(e)
      byKind.set(e.kind, list)
    }
    for (const kind of byKind.keys()) if (!sinkOf(kind)) throw new PoisonEntry(`outbox: no sink for entry kind "${kind}"`)
    await this.db.transaction(async (tx) => {
      // New accounts first: an owner entry of another shard may come earlier in the round, and its
      // update needs the account's row (a missing one is poison: ledger/sinks.ts, ownerSink).
      const kinds = [...byKind.keys()].sort((a, b) => Number(b === 'account') - Number(a === 'account'))
      for (const kind of kinds) await sinkOf(kind)!(tx as unknown as Database, byKind.get(kind)!, o)
    })
  }

  private async reclaimStale(): Promise<void> {
    await Promise.all(
      Array.from({ length: SHARDS }, async (_, s) => {
        const res = (await this.ctx.redis
          .xautoclaim(this.stream(s), GROUP, this.consumer, this.staleMs, '0-0', 'COUNT', 1000, 'JUSTID')
          .catch(() => null)) as [string, string[]] | null
        if (res && res[1].length > 0) this.pendingMayExist[s] = true
      }),
    )
  }

  /** Unflushed entries and the age of the oldest, over every shard. */
  async lag(): Promise<{ entries: number; oldest_ms: number }> {
    const now = Date.now()
    const per = await Promise.all(
      Array.from({ length: SHARDS }, async (_, s) => {
        const key = this.stream(s)
        const [len, first] = await Promise.all([this.ctx.redis.xlen(key), this.ctx.redis.xrange(key, '-', '+', 'COUNT', 1)])
        const firstId = first[0]?.[0]
        return { len, age: firstId ? now - Number(firstId.split('-')[0]) : 0 }
      }),
    )
    return { entries: per.reduce((a, p) => a + p.len, 0), oldest_ms: Math.max(0, ...per.map((p) => p.age)) }
  }

  /** Entries waiting for the founder in the dead-letter streams (all shards). */
  deadLetters(): Promise<number> {
    return countDeadLetters(this.ctx)
  }

  stats() {
    return { ...this.counters, running: this.running, consumer: this.consumer }
  }
}

/** The stream ids of a batch, each once: a call entry carrying its settle's refund reads as two entries under one id. */
function streamIdsOf(entries: OutboxEntry[]): string[] {
  const ids: string[] = []
  for (const e of entries) if (ids.at(-1) !== e.streamId) ids.push(e.streamId)
  return ids
}
