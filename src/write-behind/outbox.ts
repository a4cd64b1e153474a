/**
 * The outbox contract on the TypeScript side: the entry as read from a shard's stream, its ONE
 * parser, the typed readers of each kind's fields (the names the Lua scripts XADD), and the ONE way
 * to read a stream (a paged XRANGE scan, or a consumer group's batch). The flusher, rebuild and
 * reconcile all read through here, so the format has a single opinion about it.
 * Its own file so that the sinks (ledger, governance, payments, events) and their registry can all
 * depend on it without depending on each other.
 */
import type { Database } from '../db/client'
import type { RedisContext } from '../redis/context'
import { withCacheWrites, type TokenCounts } from '../metering/usage'

export interface OutboxEntry {
  streamId: string
  kind: string
  fields: Record<string, string>
}

/**
 * The stream id the entry's script first wrote it under: its place in the shard's order. A dead
 * letter the founder replays goes back to the outbox under a new id, carrying the first one as
 * `orig_id` (lua/replay-dead-letter.lua); whatever orders an account's entries (the remainder a
 * rebuild restores, a mandate's version) and the `stream_id` Postgres keeps take this one. The
 * flusher acks by `streamId`.
 */
export const writtenId = (e: OutboxEntry): string => e.fields.orig_id || e.streamId

/**
 * `fresh`: every entry was delivered for the first time (none read back from a pending list), so
 * no row of it can be in Postgres yet: an append-only sink may skip its conflict check. A duplicate
 * then fails the write, and the flusher's slow path writes the batch again without `fresh`.
 */
export type Sink = (tx: Database, entries: OutboxEntry[], o?: { fresh?: boolean }) => Promise<void>

/**
 * Kinds that move money: one immutable ledger row each. `reversal`: a credited card charge refunded
 * or disputed at the processor (reverse-charge.lua), credits taken back, `ref` the charge.
 */
export const MONEY_KINDS = ['grant', 'debit', 'refund', 'referral', 'topup', 'reversal'] as const
export type MoneyKind = (typeof MONEY_KINDS)[number]

const MONEY = new Set<string>(MONEY_KINDS)
export const isMoneyKind = (kind: string): kind is MoneyKind => MONEY.has(kind)

/**
 * A metered call settle.lua filed: its `call` entry with the settle's money entry folded in (field
 * `settle`). `charged_call`: the call's one debit, of its charge (its reservation was a hold, not
 * an entry). `settled_call`: a call debited before the hold, whose reservation is in the ledger —
 * the refund of what the settle released. Kinds of their own, so that a flusher that does not know
 * them dead-letters them.
 */
const FOLDED: Record<string, 'debit' | 'refund'> = { charged_call: 'debit', settled_call: 'refund' }

/**
 * A stream entry's flat [field, value, …] list, as XRANGE and XREADGROUP give it: the entries it
 * holds, one as a rule. A folded call holds two: the settle's money entry first, then the call,
 * both under the one stream id, so that every reader (sinks, observers, rebuild, reconcile) sees
 * the same entries as when settle.lua writes them as two.
 */
export function parseOutboxEntry(streamId: string, raw: string[]): OutboxEntry[] {
  const fields: Record<string, string> = {}
  for (let i = 0; i + 1 < raw.length; i += 2) fields[raw[i]!] = raw[i + 1]!
  const kind = fields.kind ?? ''
  if (kind === 'packed_debit') return [packedDebit(streamId, fields) ?? { streamId, kind, fields }]
  if (kind === 'packed_debits') return packedDebits(streamId, fields) ?? [{ streamId, kind, fields }]
  if (kind === 'filed_calls') return packedCalls(streamId, fields, true) ?? [{ streamId, kind, fields }]
  if (kind === 'packed_calls') return packedCalls(streamId, fields, false) ?? [{ streamId, kind, fields }]
  if (kind === 'packed_charged_calls') return packedChargedCalls(streamId, fields) ?? [{ streamId, kind, fields }]
  // A `settle` that does not unpack keeps its kind, one no sink takes: the flusher dead-letters
  // that entry alone (src/ledger/poison.ts) rather than file a money entry read wrong.
  return unfold(streamId, fields) ?? [{ streamId, kind, fields }]
}

/** A folded call's two entries (money first, then the call); null when it is not one or does not unpack. */
function unfold(streamId: string, fields: Record<string, string>): OutboxEntry[] | null {
  const kind = fields.kind ?? ''
  const folded = Object.hasOwn(FOLDED, kind) ? FOLDED[kind] : undefined
  if (!folded) return null
  const money = settleEntry(streamId, fields, folded)
  if (!money) return null
  fields.kind = 'call'
  return [money, { streamId, kind: 'call', fields }]
}

/** A count as the packed entries write it. */
const DIGITS = /^\d+$/

/**
 * A settle batch's filed calls as settle.lua writes them: one entry, its field `c` a line per call,
 * `<call_id>|<organic>|<charged>|<tcw,tcw1h or ''>|<bytes of settle>|<settle>|<record>`, joined by
 * '\n'. The settle field (whose target and model may hold anything) is read by its byte length; the
 * record, JSON.stringify's, runs to the next '\n'. Each line is the plain `charged_call` entry it
 * stands for, field for field, read as that entry is (its debit, then its call), all under the one
 * stream id; null when any line does not unpack (the entry keeps its kind, which no sink takes: the
 * flusher dead-letters it whole, never half of it filed).
 */
function packedChargedCalls(streamId: string, raw: Record<string, string>): OutboxEntry[] | null {
  if (!raw.c) return null
  // Byte offsets: the settle's length is Lua's #, in bytes.
  const c = Buffer.from(raw.c)
  const out: OutboxEntry[] = []
  let at = 0
  while (at < c.length) {
    const head: string[] = []
    for (let n = 0; n < 5; n++) {
      const bar = c.indexOf(0x7c, at)
      const nl = c.indexOf(0x0a, at)
      if (bar < 0 || (nl >= 0 && nl < bar)) return null
      head.push(c.toString('utf8', at, bar))
      at = bar + 1
    }
    const [id, organic, charged, writes, bytes] = head as [string, string, string, string, string]
    if (!id || (organic !== '0' && organic !== '1') || !DIGITS.test(charged) || !DIGITS.test(bytes)) return null
    const settleEnd = at + Number(bytes)
    if (settleEnd >= c.length || c[settleEnd] !== 0x7c) return null
    const settle = c.toString('utf8', at, settleEnd)
    const nl = c.indexOf(0x0a, settleEnd + 1)
    const recEnd = nl < 0 ? c.length : nl
    // A '\n' ends the last line only when another follows.
    if (nl === c.length - 1) return null
    const f: Record<string, string> = { kind: 'charged_call', id: `${id}:call`, organic, charged, rec: c.toString('utf8', settleEnd + 1, recEnd), settle }
    if (writes !== '') {
      const comma = writes.indexOf(',')
      if (comma < 1 || comma === writes.length - 1) return null
      f.tcw = writes.slice(0, comma)
      f.tcw1h = writes.slice(comma + 1)
    }
    // A replayed dead letter carries the id it was first written under (lua/replay-dead-letter.lua).
    if (raw.orig_id) f.orig_id = raw.orig_id
    const two = unfold(streamId, f)
    if (!two) return null
    out.push(...two)
    at = recEnd + 1
  }
  return out
}

/** Fields of debit.lua's packed entry (`packed_debit`, field `d`), in its order; the target follows. */
const PACKED_DEBIT = ['acct', 'agent', 'amount', 'bal', 'call', 'at'] as const

/**
 * A flat debit as debit.lua writes it: one field, `d`, its values joined by '|' with the target last
 * (two fields where the entry had ten: each costs the script an argument and the stream a field).
 * The debit entry it stands for, field for field; null when `d` is not of that shape (the entry
 * then keeps its kind, which no sink takes: the flusher dead-letters it, src/ledger/poison.ts).
 */
function packedDebit(streamId: string, raw: Record<string, string>): OutboxEntry | null {
  const packed = raw.d ?? ''
  const f: Record<string, string> = { kind: 'debit' }
  const at = unpackInto(f, packed, PACKED_DEBIT)
  if (at < 0 || !f.call) return null
  f.id = `${f.call}:debit`
  f.target = packed.slice(at)
  // A replayed dead letter carries the id it was first written under (lua/replay-dead-letter.lua).
  if (raw.orig_id) f.orig_id = raw.orig_id
  return { streamId, kind: 'debit', fields: f }
}

/**
 * A batch's flat debits of one outbox as debit.lua's batch writes them (src/redis/batched-scripts.ts):
 * one stream entry, `d` = each call's packed debit one a line, in the calls' order (no line holds a
 * newline: ids are generated base64url, a flat target a catalog slug or `proxy:<provider id>`, both
 * of src/catalog/schema.ts's patterns). One debit entry per line, all under the one
 * stream id; null when any line does not unpack (the entry then keeps its kind and is dead-lettered
 * whole, as a bad packed_debit is: a money entry is never read wrong, nor half of a batch filed).
 */
function packedDebits(streamId: string, raw: Record<string, string>): OutboxEntry[] | null {
  const out: OutboxEntry[] = []
  for (const d of (raw.d ?? '').split('\n')) {
    const e = packedDebit(streamId, raw.orig_id ? { d, orig_id: raw.orig_id } : { d })
    if (!e) return null
    out.push(e)
  }
  return out
}

/**
 * The '|'-terminated values at the start of a packed field, one per name, into `f`: the offset where
 * the rest begins, or -1 when the field holds fewer.
 */
function unpackInto(f: Record<string, string>, packed: string, names: readonly string[]): number {
  let at = 0
  for (const name of names) {
    const bar = packed.indexOf('|', at)
    if (bar < 0) return -1
    f[name] = packed.slice(at, bar)
    at = bar + 1
  }
  return at
}

/**
 * A batch of calls as record-calls.lua files it: one `filed_calls` entry, its field `c` a line per
 * call, `<acct>|<call_id>|<charged, an organic call's, else ''>|<record>` (the call's in-flight
 * member first), joined by '\n' (a record is JSON.stringify's, which never writes a raw newline).
 * `packed_calls`, the lines without `<acct>|`, is what the script wrote before: read for the entries a
 * running outbox still holds across an upgrade. Each line is the plain `call` entry it stands for,
 * field for field, all under the one stream id; null when a line is not of that shape (the entry then
 * keeps its kind, which no sink takes: the flusher dead-letters it whole).
 */
function packedCalls(streamId: string, raw: Record<string, string>, memberFirst: boolean): OutboxEntry[] | null {
  const packed = raw.c
  if (!packed) return null
  const out: OutboxEntry[] = []
  for (const line of packed.split('\n')) {
    // The call id starts past the account (and its '|') of a `filed_calls` line.
    const from = memberFirst ? line.indexOf('|') + 1 : 0
    if (memberFirst && from < 2) return null
    const a = line.indexOf('|', from)
    const b = a <= from ? -1 : line.indexOf('|', a + 1)
    if (b < 0 || b === line.length - 1) return null
    const charged = line.slice(a + 1, b)
    if (charged !== '' && !DIGITS.test(charged)) return null
    const f: Record<string, string> = { kind: 'call', id: `${line.slice(from, a)}:call`, organic: charged === '' ? '0' : '1' }
    if (charged !== '') f.charged = charged
    f.rec = line.slice(b + 1)
    // A replayed dead letter carries the id it was first written under (lua/replay-dead-letter.lua).
    if (raw.orig_id) f.orig_id = raw.orig_id
    out.push({ streamId, kind: 'call', fields: f })
  }
  return out
}

/** Fields of settle.lua's packed entry, in its order; the target's byte length, target and model follow. */
const PACKED = ['acct', 'agent', 'amount', 'bal', 'rem', 'uncharged_micro', 'tin', 'tcached', 'tout', 'usage', 'at'] as const

/**
 * The money entry settle.lua folded into a call entry (lua/settle.lua), field for field as its own
 * XADD writes it; null when the packed field is not of that shape.
 */
function settleEntry(streamId: string, call: Record<string, string>, kind: 'debit' | 'refund'): OutboxEntry | null {
  const packed = call.settle ?? ''
  const id = call.id ?? ''
  if (!id.endsWith(':call') || call.charged === undefined) return null
  const callId = id.slice(0, -':call'.length)
  const f: Record<string, string> =
    kind === 'debit'
      ? { kind, id: `${callId}:debit`, call: callId, charged: call.charged }
      : { kind, id: `${callId}:settle`, call: callId, ref: `${callId}:debit`, reason: 'metered_settle', charged: call.charged }
  if (call.orig_id) f.orig_id = call.orig_id
  // The cache writes ride beside the packed field (lua/settle.lua), only when there were any.
  if (call.tcw !== undefined) f.tcw = call.tcw
  if (call.tcw1h !== undefined) f.tcw1h = call.tcw1h
  const at = unpackInto(f, packed, PACKED)
  if (at < 0) return null
  const bar = packed.indexOf('|', at)
  const targetBytes = Number(packed.slice(at, bar))
  if (bar < 0 || !Number.isInteger(targetBytes) || targetBytes < 0) return null
  const rest = Buffer.from(packed.slice(bar + 1))
  // The length is in bytes (Lua's #), and after the target comes the '|' before the model.
  if (rest[targetBytes] !== 0x7c) return null
  f.target = rest.subarray(0, targetBytes).toString()
  f.model = rest.subarray(targetBytes + 1).toString()
  return { streamId, kind, fields: f }
}

const optNum = (v: string | undefined) => (v ? Number(v) : null)

/** A money entry (grant, debit, refund, referral, topup, reversal). */
export interface MoneyFields {
  id: string
  kind: string
  account: string
  agent: string | null
  /** Signed credits: negative for a debit. */
  amount: number
  /** The balance right after this entry, as the script that wrote it saw it. */
  balanceAfter: number
  callId: string | null
  refId: string | null
  target: string | null
  /** A referral bonus not (fully) credited: the part left out, and why; a reversal: the credits it could not take back (reason `unrecovered`). */
  uncredited: number | null
  reason: string | null
  at: number
  /** Metered calls (docs/api.md §7): the model (debit and settle), the tokens (settle.lua). */
  model: string | null
  tokens: TokenCounts | null
  /** A metered settle (settle.lua's `rem`): the account's micro-credit remainder after it. */
  remainder: number | null
}

export function moneyFields({ kind, fields: f }: OutboxEntry): MoneyFields {
  return {
    id: f.id!,
    kind,
    account: f.acct!,
    agent: f.agent || null,
    amount: Number(f.amount),
    balanceAfter: Number(f.bal),
    callId: f.call || null,
    refId: f.ref || null,
    target: f.target || null,
    uncredited: optNum(f.uncredited),
    reason: f.reason || null,
    at: Number(f.at),
    model: f.model || null,
    tokens: f.tin !== undefined ? withCacheWrites({ input: Number(f.tin), cached: Number(f.tcached ?? 0), output: Number(f.tout ?? 0) }, Number(f.tcw ?? 0), Number(f.tcw1h ?? 0)) : null,
    remainder: f.rem !== undefined ? Number(f.rem) : null,
  }
}

/** `account`: a new account (create-account.lua). */
export interface AccountFields {
  account: string
  email: string
  publicRef: string
  origin: string | null
  referrer: string | null
  ownerTokenHash: string
  at: number
}

export function accountFields({ fields: f }: OutboxEntry): AccountFields {
  return { account: f.acct!, email: f.email!, publicRef: f.public_ref!, origin: f.origin || null, referrer: f.referrer || null, ownerTokenHash: f.owner!, at: Number(f.at) }
}

/** `owner`: a rotated owner token. */
export function ownerFields({ fields: f }: OutboxEntry): { account: string; ownerTokenHash: string } {
  return { account: f.acct!, ownerTokenHash: f.owner! }
}

/** Absent field = null; for `allow`, present = the patterns joined by "\n" (possibly none). */
const present = (v: string | undefined) => (v === undefined ? null : v)
const presentNum = (v: string | undefined) => (v === undefined ? null : Number(v))

/** `account_policy`: the account's whole policy at version v (set-policy.lua). */
export interface AccountPolicyFields {
  account: string
  version: number
  dailyCap: number | null
  allow: string | null
  balanceCap: number | null
  /** The warning levels as the account hash keeps them (docs/api.md §13a): null = the default. */
  thresholds: string | null
  at: number
}

export function accountPolicyFields({ fields: f }: OutboxEntry): AccountPolicyFields {
  return {
    account: f.acct!, version: Number(f.v), dailyCap: presentNum(f.daily_cap), allow: present(f.allow), balanceCap: presentNum(f.balance_cap),
    thresholds: present(f.thresholds), at: Number(f.at),
  }
}

/** `agent`: the agent's whole row at version v (lua/lib/agent-entry.lua). */
export interface AgentFields {
  account: string
  agent: string
  tokenHash: string
  name: string
  state: string
  created: number
  version: number
  dailyCap: number | null
  allow: string | null
  perCallMax: number | null
  /** The sub-agent tree (docs/api.md §8): parent, ancestors parent first, depth, budget, expiry (ms). */
  parent: string | null
  chain: string[]
  depth: number
  budget: number | null
  expires: number | null
  at: number
}

export function agentFields({ fields: f }: OutboxEntry): AgentFields {
  return {
    account: f.acct!,
    agent: f.agent!,
    tokenHash: f.token!,
    name: f.name!,
    state: f.state!,
    created: Number(f.created),
    version: Number(f.v),
    dailyCap: presentNum(f.daily_cap),
    allow: present(f.allow),
    perCallMax: presentNum(f.per_call_max),
    parent: f.parent || null,
    chain: f.chain ? f.chain.split(',') : [],
    depth: f.depth ? Number(f.depth) : 1,
    budget: presentNum(f.budget),
    expires: presentNum(f.expires),
    at: Number(f.at),
  }
}

/** Entries per XRANGE page: one round trip each, never the whole stream at once. */
const SCAN_PAGE = 1000

/** Every entry of a stream, oldest first, read in pages. */
async function* scanStream(ctx: Pick<RedisContext, 'redis'>, key: string): AsyncGenerator<[string, string[]]> {
  let from = '-'
  for (;;) {
    const page = await ctx.redis.xrange(key, from, '+', 'COUNT', SCAN_PAGE)
    yield* page
    if (page.length < SCAN_PAGE) return
    from = '(' + page.at(-1)![0]
  }
}

/** Every entry of one shard's outbox, oldest first, read in pages. */
export async function* scanOutbox(ctx: Pick<RedisContext, 'redis' | 'keys'>, shard: number): AsyncGenerator<OutboxEntry> {
  for await (const [id, raw] of scanStream(ctx, ctx.keys.outbox(shard))) yield* parseOutboxEntry(id, raw)
}

/**
 * Every entry waiting in one shard's dead letters, as the outbox entry it was, under the stream id
 * it was buried from (lua/dead-letter.lua keeps the entry's own fields prefixed `f:`, beside its
 * `src`). The Redis balance already holds a dead-lettered money entry and Postgres does not: what
 * sums an account's entries (reconcile, the rebuild) counts it with the outbox's.
 */
export async function* scanDeadLetters(ctx: Pick<RedisContext, 'redis' | 'keys'>, shard: number): AsyncGenerator<OutboxEntry> {
  for await (const [id, raw] of scanStream(ctx, ctx.keys.deadLetters(shard))) {
    const own: string[] = []
    let src = id
    for (let i = 0; i + 1 < raw.length; i += 2) {
      if (raw[i]!.startsWith('f:')) own.push(raw[i]!.slice(2), raw[i + 1]!)
      else if (raw[i] === 'src') src = raw[i + 1]!
    }
    yield* parseOutboxEntry(src, own)
  }
}

/**
 * One batch of a consumer group: from '0' this consumer's unacked entries, from '>' new ones.
 */
export async function readOutboxGroup(
  ctx: Pick<RedisContext, 'redis'>,
  key: string,
  group: string,
  consumer: string,
  count: number,
  from: '0' | '>',
): Promise<OutboxEntry[]> {
  const res = (await ctx.redis.xreadgroup('GROUP', group, consumer, 'COUNT', count, 'STREAMS', key, from)) as [string, [string, string[]][]][] | null
  return (res?.[0]?.[1] ?? []).flatMap(([streamId, raw]) => parseOutboxEntry(streamId, raw))
}
