/**
 * Every order in which Stripe may deliver the events of one charge — its credit, a full refund and
 * a dispute; or its credit and two partial refunds (`amount_refunded` cumulative, as Stripe sends
 * it) — each event delivered twice (the second copy under a new event id, so the scripts' own
 * dedupe is what holds, not the webhook's event-id key), duplicates interleaved: all 90 orders of
 * the six deliveries, for a credit pack, an auto-refill whose answer was unknown (credited by
 * `payment_intent.succeeded`) and a pack parked past the balance cap that the founder approves.
 * Some orders spend credits in between. Each ends with the charge's credits = paid − reversed,
 * never taking what was spent (that part recorded `unrecovered`), the ledger exact in Redis after
 * every step and in Postgres after the flush; then Redis loses the accounts, `ledger:rebuild`
 * restores the same balances and records, and every event delivered again changes nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { ledgerEntries } from '../../src/db/schema'
import { restoreMissing } from '../../src/recovery/rebuild'
import type { SignedEvent } from '../fakes/stripe'
import { assertLedger } from '../helpers/invariants'
import { checkRedisInvariant, redisBalance } from '../helpers/ledger'
import { get, pathOf } from '../helpers/money'
import { consentStripe, deliver, sessionIdOf, startStripeApp, type StripeTestApp } from '../helpers/stripe-app'

const ADMIN = 'founder-token-0123456789abcdef'
let a: StripeTestApp
beforeAll(async () => {
  a = await startStripeApp({ ADMIN_TOKEN: ADMIN, DEFAULT_BALANCE_CAP: '30000' })
}, 30_000)
afterAll(async () => {
  await a.close()
}, 30_000)

type Owner = { token: string; account_id: string }
type Name = 'credit' | 'second' | 'third'

/** Every distinct order of a multiset (each name twice: 6!/2³ = 90 orders). */
function orders(items: Name[]): Name[][] {
  if (items.length === 0) return [[]]
  const out: Name[][] = []
  for (const n of new Set(items)) {
    const rest = [...items]
    rest.splice(rest.indexOf(n), 1)
    for (const o of orders(rest)) out.push([n, ...o])
  }
  return out
}
const ALL = orders(['credit', 'credit', 'second', 'second', 'third', 'third'])

/** A charge whose events exist at Stripe but were not delivered yet. */
interface Charge {
  owner: Owner
  pi: string
  /** The balance before any of its events. */
  base: number
  credits: number
  cents: number
  credit: SignedEvent
}

type Kind = 'pack' | 'refill' | 'parked'

async function paidPack(owner: Owner, i: number): Promise<{ credit: SignedEvent; pi: string }> {
  const b = await a.t.req('GET', '/v1/balance', { token: owner.token })
  const r = await get(a.t, pathOf(b.body.links.packs[i].url))
  const sid = sessionIdOf(r.headers.get('location')!)
  const credit = await a.stripe.payCheckout(sid)
  return { credit, pi: a.stripe.sessions.get(sid)!.payment_intent as string }
}

async function newCharge(kind: Kind): Promise<Charge> {
  const { t, stripe } = a
  const owner = await t.signup()
  if (kind === 'pack') {
    const { credit, pi } = await paidPack(owner, 0) // $5 = 5000 credits
    return { owner, pi, base: await redisBalance(t, owner.account_id), credits: 5000, cents: 500, credit }
  }
  if (kind === 'parked') {
    const first = await paidPack(owner, 1) // 20000
    expect((await deliver(t, first.credit)).body.result).toBe('credited')
    const { credit, pi } = await paidPack(owner, 1) // 20500 + 20000 > 30000: parked when credited
    return { owner, pi, base: await redisBalance(t, owner.account_id), credits: 20000, cents: 2000, credit }
  }
  // An auto-refill whose answer is `processing`: credited only when payment_intent.succeeded comes.
  // The ceiling is the one refill, so spending below the threshold later starts no other.
  await consentStripe(a, owner.token, { threshold: 1000, refill: 3000, ceiling: 3000 })
  stripe.chargeProcessing = true
  try {
    expect((await t.req('POST', '/v1/call/test.echo', { token: owner.token, body: { q: 'x' } })).status).toBe(200)
    await t.s.refiller.idle()
  } finally {
    stripe.chargeProcessing = false
  }
  const pis = [...stripe.paymentIntents.values()].filter((p) => p.metadata.acct === owner.account_id)
  expect(pis.map((p) => [p.status, p.metadata.purpose])).toEqual([['processing', 'refill']])
  const pi = pis[0]!
  pi.status = 'succeeded'
  return { owner, pi: pi.id, base: await redisBalance(t, owner.account_id), credits: 3000, cents: 300, credit: await stripe.signedEvent('payment_intent.succeeded', pi) }
}

type Scenario = 'refund+dispute' | 'two partial refunds'

/** The second and third events, made at Stripe in this order; the credits they reverse together. */
async function reversalsOf(c: Charge, s: Scenario): Promise<{ second: SignedEvent; third: SignedEvent; reversed: number }> {
  const { stripe } = a
  if (s === 'refund+dispute') {
    const second = await stripe.dashboardRefund(c.pi, c.cents)
    const third = await stripe.dispute(c.pi)
    return { second, third, reversed: c.credits }
  }
  const first = Math.round(c.cents / 5)
  const second = await stripe.dashboardRefund(c.pi, first) // cumulative 1/5
  const third = await stripe.dashboardRefund(c.pi, Math.round((c.cents * 3) / 5) - first) // cumulative 3/5
  expect(JSON.parse(third.payload).data.object.amount_refunded).toBe(Math.round((c.cents * 3) / 5))
  return { second, third, reversed: Math.floor((c.credits * 3) / 5) }
}

/** The same event object under a new event id (a duplicate Stripe sends, or a redelivery after our dedupe key is gone). */
async function copyOf(ev: SignedEvent): Promise<SignedEvent> {
  const e = JSON.parse(ev.payload)
  return a.stripe.signedEvent(e.type, e.data.object)
}

/** Two calls of 300 credits, as many as the balance allows: what was spent. */
async function spend(owner: Owner): Promise<number> {
  let spent = 0
  for (let i = 0; i < 2; i++) {
    const r = await a.t.req('POST', '/v1/call/test.pricey', { token: owner.token, body: { i } })
    if (r.status === 200) spent += 300
    else expect([r.status, r.body.error]).toEqual([402, 'PAYMENT_REQUIRED'])
  }
  return spent
}

async function parkedIdOf(c: Charge): Promise<string | null> {
  return a.t.s.ctx.redis.hget(a.t.s.ctx.keys.charge(c.owner.account_id, c.pi), 'parked')
}

interface Run {
  c: Charge
  deliveries: SignedEvent[]
  expected: number
  reversal: Record<string, string>
  chargeCredits: string | null
}

const stores = () => ({ ctx: a.t.s.ctx, db: a.t.s.db, flusher: a.t.s.flusher })
const ledgerOf = (acct: string) => a.t.s.db.db.select().from(ledgerEntries).where(and(eq(ledgerEntries.accountId, acct)))

/** One order, delivered; returns what the rebuild must bring back. */
async function play(kind: Kind, s: Scenario, order: Name[], i: number): Promise<Run> {
  const { t } = a
  const c = await newCharge(kind)
  const acct = c.owner.account_id
  const rev = await reversalsOf(c, s)
  const firsts: Record<Name, SignedEvent> = { credit: c.credit, second: rev.second, third: rev.third }
  const copies: Record<Name, SignedEvent> = { credit: await copyOf(c.credit), second: await copyOf(rev.second), third: await copyOf(rev.third) }
  const seen = new Set<Name>()
  const deliveries = order.map((n) => {
    const ev = seen.has(n) ? copies[n] : firsts[n]
    seen.add(n)
    return ev
  })
  // Some orders spend credits at some point; a parked charge is approved right after its credit
  // event, or at the end.
  const spendAt = i % 5 === 4 ? -1 : i % 7
  const approveEarly = i % 2 === 0
  let spent = 0
  let approved = false
  const approve = async () => {
    const pk = await parkedIdOf(c)
    if (!pk) return
    const r = await t.req('POST', `/admin/parked/${pk}/approve`, { token: ADMIN })
    // Approvable unless reversed in full meanwhile (then `reversed`: nothing left to credit).
    if (!approved) expect(r.status === 200 ? r.body.state : r.body.error).toBe(r.status === 200 ? 'approved' : 'CONFLICT')
    approved = true
  }
  for (const [j, ev] of deliveries.entries()) {
    if (j === spendAt) spent += await spend(c.owner)
    const w = await deliver(t, ev)
    expect(w.status).toBe(200)
    await checkRedisInvariant(t, acct)
    if (kind === 'parked' && approveEarly && ev === c.credit) await approve()
  }
  if (spendAt === 6) spent += await spend(c.owner)
  if (kind === 'parked') {
    await approve()
    await approve() // the founder clicks twice: nothing more
  }
  await checkRedisInvariant(t, acct)

  const balance = await redisBalance(t, acct)
  await assertLedger(stores(), [{ account: acct, balance }])
  const rows = await ledgerOf(acct)
  const unrecovered = rows.filter((r) => r.uncreditedReason === 'unrecovered').reduce((x, r) => x + Number(r.uncredited), 0)
  const where = `${kind} ${s} [${order.join(' ')}] spend@${spendAt}`
  // Paid − reversed, less what was spent; what a reversal could not take (spent already) is unrecovered.
  expect(balance, where).toBe(c.base + c.credits - rev.reversed - spent + unrecovered)
  expect(unrecovered, where).toBeLessThanOrEqual(spent)
  if (unrecovered > 0) expect(balance, where).toBe(0)
  const reversal = await t.redis.hgetall(t.s.ctx.keys.reversal(acct, c.pi))
  expect(Number(reversal.refund ?? 0) + Number(reversal.dispute ?? 0), where).toBe(rev.reversed)
  // Nothing of the charge is left awaiting the founder.
  const pk = await parkedIdOf(c)
  if (pk) expect(await t.redis.zscore(t.s.ctx.keys.parkedQueue(t.s.ctx.keys.shardOf(acct)), pk), where).toBeNull()
  // The charge record keeps the whole charge's credits (the rate of a later reversal).
  const chargeCredits = await t.redis.hget(t.s.ctx.keys.charge(acct, c.pi), 'credits')
  if (chargeCredits !== null) expect(Number(chargeCredits), where).toBe(c.credits)
  return { c, deliveries, expected: balance, reversal, chargeCredits }
}

/** Redis loses the accounts (and the webhook dedupe); the rebuild brings them back, and every event again changes nothing. */
async function rebuildAndReplay(runs: Run[]): Promise<void> {
  const { t } = a
  const { keys } = t.s.ctx
  for (const r of runs) {
    const acct = r.c.owner.account_id
    await t.redis.del(keys.account(acct), keys.charge(acct, r.c.pi), keys.reversal(acct, r.c.pi), ...r.deliveries.map((d) => keys.webhookEvent(d.id)))
  }
  const summary = await restoreMissing(t.s.ctx, t.s.db.db)
  expect(summary.failed).toEqual([])
  for (const r of runs) {
    const acct = r.c.owner.account_id
    expect(await redisBalance(t, acct)).toBe(r.expected)
    expect(await t.redis.hgetall(keys.reversal(acct, r.c.pi))).toMatchObject({ refund: r.reversal.refund ?? '0', dispute: r.reversal.dispute ?? '0' })
    if (r.chargeCredits !== null) expect(await t.redis.hget(keys.charge(acct, r.c.pi), 'credits')).toBe(r.chargeCredits)
    for (const d of r.deliveries) expect((await deliver(t, d)).status).toBe(200)
    expect(await redisBalance(t, acct)).toBe(r.expected)
  }
  // Redis = Σ entries (Postgres ∪ outbox), before and after the flush.
  await assertLedger(
    stores(),
    runs.map((r) => ({ account: r.c.owner.account_id, balance: r.expected })),
  )
}

if (ALL.length !== 90) throw new Error(`${ALL.length} orders, expected 6!/2³ = 90`)

for (const kind of ['pack', 'refill', 'parked'] as const) {
  describe(`every order of one ${kind === 'parked' ? 'parked pack' : kind}'s events, each delivered twice`, () => {
    for (const s of ['refund+dispute', 'two partial refunds'] as const) {
      test(
        `credit, ${s}: credits = paid − reversed, the ledger exact, and after a rebuild`,
        async () => {
          const runs: Run[] = []
          for (const [i, order] of ALL.entries()) runs.push(await play(kind, s, order, i))
          await rebuildAndReplay(runs)
        },
        240_000,
      )
    }
  })
}
