/**
 * Fault: Redis loses data, and `bun run ledger:rebuild` brings the accounts back from Postgres
 * plus what the outbox still holds. Runs on its own redis-server without persistence (a restart
 * empties it); the machine's shared Redis is never touched.
 *   - total loss (everything flushed, then Redis restarts empty): every account, its agents,
 *     policy, today's spend and pending referral come back; tokens work; caps still hold; the
 *     flusher recreates its groups and goes on;
 *   - partial loss (an account hash evicted while entries are still unflushed): the balance is
 *     Σ of Postgres ∪ outbox;
 *   - drift (a balance that disagrees with its ledger) is reported, and fixed with --force;
 *   - money paid in (Stripe mode): a charge credited or parked before the loss is a duplicate when
 *     Stripe delivers it again; a parked payment still awaits the founder.
 *
 *   bun test test/faults/redis-data-loss.test.ts
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { buryEntry, listDeadLetters, replayDeadLetter } from '../../src/write-behind/dead-letters'
import { decideParked } from '../../src/ledger/topup'
import { SHARDS } from '../../src/redis/keys'
import { startTestApp, type TestApp } from '../helpers/harness'
import { get, pathOf } from '../helpers/money'
import { deliver, sessionIdOf, startStripeApp, type StripeTestApp } from '../helpers/stripe-app'
import { assertLedger, drain } from '../helpers/invariants'
import { openMeteredCall } from '../helpers/metering'
import { startRedisServer, type RedisServer } from '../helpers/redis-server'
import { cleanupAll } from '../helpers/cleanup'

let redis: RedisServer
let t: TestApp
beforeAll(async () => {
  redis = await startRedisServer()
  t = await startTestApp({ env: { REDIS_URL: redis.url } })
  // A clock in the middle of an HKT day, so no call of this file crosses midnight.
  const day = 86_400_000
  t.clock.set(Math.floor((Date.now() + 8 * 3600_000) / day) * day - 8 * 3600_000 + day / 2)
})
afterAll(() =>
  cleanupAll(
    () => t?.close(),
    () => redis?.stop(),
  ),
)

const ROOT = join(import.meta.dir, '..', '..')

/**
 * While the ledger is closed the service re-reads its marks at most this often
 * (CLOSED_RECHECK_MS in src/ledger/availability.ts): a client that retries LEDGER_UNAVAILABLE lands
 * after it. On a fast machine the CLI can finish inside that window.
 */
const RECHECK_WINDOW_MS = 250

/** `bun run ledger:rebuild -- <args>` as an operator would run it, against this app's stores. */
const rebuild = (...args: string[]) => rebuildOf(t, {}, ...args)

/** `ledger:rebuild` against another app's stores, with the env it runs with (`env`: beyond the stores). */
async function rebuildOf(app: TestApp, env: Record<string, string>, ...args: string[]): Promise<{ code: number; lines: Record<string, unknown>[]; summary: Record<string, number> }> {
  const started = Date.now()
  const p = Bun.spawn([process.execPath, 'run', 'ledger:rebuild', ...args], {
    cwd: ROOT,
    env: { ...process.env, REDIS_URL: redis.url, REDIS_KEY_PREFIX: app.prefix, DATABASE_URL: app.db.url, LOG: 'silent', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  const lines = out.split('\n').filter(Boolean).map((l) => JSON.parse(l))
  const last = err.split('\n').findLast((l) => l.startsWith('{"summary"'))
  if (!last) throw new Error(`ledger:rebuild failed (${code}): ${err}`)
  await Bun.sleep(Math.max(0, RECHECK_WINDOW_MS - (Date.now() - started)))
  return { code, lines, summary: JSON.parse(last).summary }
}

/** Waits for the running flusher to empty the outbox. */
async function drained(): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if ((await t.s.flusher.lag()).entries === 0) return
    await Bun.sleep(50)
  }
  throw new Error(`the running flusher did not drain the outbox: ${JSON.stringify(t.s.flusher.stats())}`)
}

const call = (token: string, slug = 'test.echo') => t.req('POST', `/v1/call/${slug}`, { token, body: {} })

describe('ledger:rebuild', () => {
  test('Redis restarts empty: every account comes back from Postgres, with its agents, caps, spend and pending referral', async () => {
    // The flusher runs throughout, as in production: it must survive the empty restart.
    t.s.flusher.start()
    const owner = await t.signup()
    const policy = await t.req('PUT', '/v1/policies', { token: owner.token, body: { account: { daily_cap: 40 } } })
    expect(policy.status, policy.text).toBe(200)
    const agent = await t.req('POST', '/v1/agents', { token: owner.token, body: { name: 'worker', daily_cap: 15 } })
    expect(agent.status, agent.text).toBe(201)
    for (let i = 0; i < 2; i++) expect((await call(agent.body.token)).status).toBe(200) // agent spent 10
    expect((await call(owner.token, 'test.fail')).status).toBe(502) // refunded: spends nothing
    expect((await call(owner.token)).status).toBe(200) // account spent 15 today
    const rotated = await t.req('POST', '/v1/token/rotate', { token: owner.token })
    expect(rotated.status).toBe(200)
    const referrer = await t.signup()
    const referred = await t.signup(undefined, { referred_by: referrer.public_ref }) // bonus still owed
    await drained()

    await redis.kill()
    await redis.start() // empty: no persistence
    // Nothing came back but, perhaps, the flusher's re-created consumer groups (empty streams).
    const outboxes = new Set(Array.from({ length: SHARDS }, (_, s) => t.s.ctx.keys.outbox(s)))
    expect((await t.s.ctx.redis.keys('*')).filter((k) => !outboxes.has(k))).toEqual([])
    // An empty Redis is not taken at its word: the token is not called unknown, nothing is charged.
    const refused = await call(rotated.body.token)
    expect(refused.status).toBe(503)
    expect(refused.body).toMatchObject({ error: 'LEDGER_UNAVAILABLE', retry_after_s: 5 })
    expect((await t.req('GET', '/status')).body.degraded).toContainEqual(expect.objectContaining({ reason: 'redis_empty' }))

    const r = await rebuild('--all')
    expect(r.code).toBe(0)
    expect(r.summary).toMatchObject({ restored: 3, drift: 0, failed: 0 })

    // Balances are back; the new owner token works, the old one does not.
    expect((await t.req('GET', '/v1/balance', { token: rotated.body.token })).body).toMatchObject({ balance: 485, spent_today: 15 })
    expect((await t.req('GET', '/v1/balance', { token: owner.token })).status).toBe(401)
    // The agent's cap remembers today's 10: one more 5 fits, the next does not.
    expect((await call(agent.body.token)).status).toBe(200)
    const agentCapped = await call(agent.body.token)
    expect(agentCapped.status).toBe(403)
    expect(agentCapped.body).toMatchObject({ error: 'POLICY_DENIED', rule: 'agent_daily_cap' })
    // The account's daily cap of 40 remembers today's 20.
    for (let i = 0; i < 4; i++) expect((await call(rotated.body.token)).status).toBe(200)
    expect((await call(rotated.body.token)).body.error).toBe('DAILY_CAP_REACHED')
    // The referral still pays once, on the first successful call.
    expect((await call(referred.token)).body.balance).toBe(995)
    expect((await call(referred.token)).body.balance).toBe(990)

    // The running flusher recreated its consumer groups on the empty Redis and moves the new entries.
    await drained()
    await t.s.flusher.stop()
    await assertLedger(t.s, [
      { account: owner.account_id, balance: 485 - 25 },
      { account: referrer.account_id, balance: 1000 },
      { account: referred.account_id, balance: 990 },
    ])
  })

  test('an account hash lost while its entries wait unflushed: the balance is Σ Postgres ∪ outbox', async () => {
    const a = await t.signup()
    for (let i = 0; i < 3; i++) await call(a.token)
    await drain(t.s.flusher)
    for (let i = 0; i < 4; i++) await call(a.token, 'test.cheap') // still in the outbox
    await call(a.token, 'test.fail')
    const { keys, redis: r } = t.s.ctx
    await r.del(keys.account(a.account_id))
    expect((await call(a.token)).status).toBe(401)

    const out = await rebuild('--account', a.account_id)
    expect(out.code).toBe(0)
    expect(out.lines).toEqual([expect.objectContaining({ account: a.account_id, action: 'restored', balance: 500 - 15 - 4 })])
    expect((await call(a.token)).body.balance).toBe(476)
    await assertLedger(t.s, [{ account: a.account_id, balance: 476 }])
  })

  test('a balance that disagrees with its ledger is reported as drift; --force writes the ledger’s', async () => {
    const a = await t.signup()
    await call(a.token)
    const { keys, redis: r } = t.s.ctx
    await r.hincrby(keys.account(a.account_id), 'balance', 7)
    const dry = await rebuild('--account', a.account_id, '--dry-run')
    expect(dry.lines[0]).toMatchObject({ action: 'plan', balance: 495, in_redis: 502 })
    const report = await rebuild('--all')
    expect(report.code).toBe(1)
    expect(report.lines.find((l) => l.account === a.account_id)).toMatchObject({ action: 'drift', balance: 502, ledger_balance: 495 })
    expect(Number(await r.hget(keys.account(a.account_id), 'balance'))).toBe(502)
    const forced = await rebuild('--account', a.account_id, '--force')
    expect(forced.code).toBe(0)
    expect(forced.lines[0]).toMatchObject({ action: 'restored', balance: 495 })
    await assertLedger(t.s, [{ account: a.account_id, balance: 495 }])
  })
})

describe('metered calls in flight (their reservations are holds, not entries)', () => {
  const PRICE = { input: 1000, cachedInput: 500, output: 2000 }
  const usage = { tokens: { input: 2000, cached: 0, output: 1000 }, source: 'provider' as const }

  test('--force restores the ledger’s posted balance and keeps the holds: the calls in flight settle and refund against it', async () => {
    const a = await t.signup()
    const principal = (await t.s.guard.tokens.resolve(a.token))!
    const { keys, redis: r } = t.s.ctx
    const kept = await openMeteredCall(t.s, principal, PRICE)
    const failed = await openMeteredCall(t.s, principal, PRICE)
    const held = kept.price + failed.price
    expect(await r.hmget(keys.account(a.account_id), 'balance', 'held')).toEqual([String(500 - held), String(held)])
    // The plan sets the ledger beside the posted balance (balance + held): no drift while calls hold credits.
    const dry = await rebuild('--account', a.account_id, '--dry-run')
    expect(dry.lines[0]).toMatchObject({ action: 'plan', balance: 500, in_redis: 500, held })
    await r.hincrby(keys.account(a.account_id), 'balance', 7) // drift, for --force to mend
    const forced = await rebuild('--account', a.account_id, '--force')
    expect(forced.code).toBe(0)
    expect(forced.lines[0]).toMatchObject({ action: 'restored', balance: 500 })
    expect(await r.hmget(keys.account(a.account_id), 'balance', 'held')).toEqual([String(500 - held), String(held)])
    const settled = await kept.settle('ok', { usage })
    expect(settled.charged).toBe(4)
    expect((await failed.settle('provider_error')).refunded).toBe(true)
    expect(await r.hmget(keys.account(a.account_id), 'balance', 'held')).toEqual(['496', '0'])
    await assertLedger(t.s, [{ account: a.account_id, balance: 496 }])
  })

  test('an account hash lost mid-call comes back without its holds: a call whose record outlived it is charged from the balance, given back nothing', async () => {
    const a = await t.signup()
    const principal = (await t.s.guard.tokens.resolve(a.token))!
    const { keys, redis: r } = t.s.ctx
    const call = await openMeteredCall(t.s, principal, PRICE)
    await drain(t.s.flusher)
    await r.del(keys.account(a.account_id))
    const out = await rebuild('--account', a.account_id)
    expect(out.code).toBe(0)
    expect(await r.hmget(keys.account(a.account_id), 'balance', 'held')).toEqual(['500', null])
    // The call's record outlived the hash here: its settle charges from a balance that never held
    // it, and gives back nothing it did not hold.
    const settled = await call.settle('ok', { usage })
    expect(settled.charged).toBe(4)
    expect(await r.hmget(keys.account(a.account_id), 'balance', 'held')).toEqual(['496', '0'])
    await assertLedger(t.s, [{ account: a.account_id, balance: 496 }])
    // A refund of another such call gives back nothing either.
    const other = await openMeteredCall(t.s, principal, PRICE)
    await r.hset(keys.account(a.account_id), 'held', '0')
    await r.hincrby(keys.account(a.account_id), 'balance', other.price) // as restored from its ledger, without the hold
    expect((await other.settle('provider_error')).refunded).toBe(true)
    await assertLedger(t.s, [{ account: a.account_id, balance: 496 }])
  })
})

describe('the metered micro-credit remainder (docs/api.md §7)', () => {
  const PRICE = { input: 1234, cachedInput: 567, output: 8901 }
  /** One metered call of the account, settled with this usage; returns what it charged. */
  async function settled(token: string, tokens: { input: number; cached: number; output: number }): Promise<number> {
    const principal = (await t.s.guard.tokens.resolve(token))!
    const balance = async () => Number(await t.s.ctx.redis.hget(t.s.ctx.keys.account(principal.accountId), 'balance'))
    const before = await balance()
    const call = await openMeteredCall(t.s, principal, PRICE)
    await call.settle('ok', { usage: { tokens, source: 'provider' } })
    return before - (await balance())
  }

  test('comes back with the account, from a flushed settle and from one still in the outbox: the next settle goes on from it', async () => {
    const { keys, redis: r } = t.s.ctx
    for (const flushed of [true, false]) {
      const a = await t.signup()
      // 552,327 then 194,630 micro-credits: nothing charged yet, 746,957 carried.
      expect(await settled(a.token, { input: 123, cached: 0, output: 45 })).toBe(0)
      expect(await settled(a.token, { input: 77, cached: 3, output: 11 })).toBe(0)
      if (flushed) await drain(t.s.flusher)
      expect(await r.hget(keys.account(a.account_id), 'mc_rem')).toBe('746957')
      await r.del(keys.account(a.account_id))
      const out = await rebuild('--account', a.account_id)
      expect(out.code).toBe(0)
      expect(await r.hget(keys.account(a.account_id), 'mc_rem'), flushed ? 'from Postgres' : 'from the outbox').toBe('746957')
      // 370,200 more: the carried remainder makes it the first whole credit.
      expect(await settled(a.token, { input: 300, cached: 0, output: 0 })).toBe(1)
      expect(await r.hget(keys.account(a.account_id), 'mc_rem')).toBe('117157')
      await assertLedger(t.s, [{ account: a.account_id, balance: 499 }])
    }
  })

  test('a settle replayed from the dead letters after a later one: the later settle’s remainder comes back, not the replayed one’s', async () => {
    const { keys, redis: r } = t.s.ctx
    const a = await t.signup()
    await drain(t.s.flusher)
    const shard = keys.shardOf(a.account_id)
    // The first settle's entry is dead-lettered (as by a flusher that did not know its kind).
    expect(await settled(a.token, { input: 123, cached: 0, output: 45 })).toBe(0)
    const [first] = (await r.xrange(keys.outbox(shard), '-', '+')).filter(([, f]) => f.includes('charged_call'))
    expect(await buryEntry(t.s.ctx, shard, 'flusher', first![0], 'outbox: no sink for entry kind "charged_call"')).toBe(true)
    // A later settle is flushed; then the founder replays the first one, under a newer stream id.
    expect(await settled(a.token, { input: 77, cached: 3, output: 11 })).toBe(0)
    await drain(t.s.flusher)
    expect(await r.hget(keys.account(a.account_id), 'mc_rem')).toBe('746957')
    const dl = (await listDeadLetters(t.s.ctx, 1000)).find((d) => d.source_id === first![0])!
    expect(await replayDeadLetter(t.s.ctx, dl.id)).not.toBeNull()
    for (const flushed of [false, true]) {
      if (flushed) await drain(t.s.flusher)
      await r.del(keys.account(a.account_id))
      const out = await rebuild('--account', a.account_id)
      expect(out.code).toBe(0)
      expect(await r.hget(keys.account(a.account_id), 'mc_rem'), flushed ? 'from Postgres' : 'from the outbox').toBe('746957')
    }
    await assertLedger(t.s, [{ account: a.account_id, balance: 500 }])
  })
})


describe('money paid in (Stripe): what only Redis held of a charge comes back', () => {
  const ADMIN = 'founder-token-0123456789abcdef'
  const ENV = { DEFAULT_BALANCE_CAP: '30000' }
  let s: StripeTestApp
  beforeAll(async () => {
    s = await startStripeApp({ REDIS_URL: redis.url, ADMIN_TOKEN: ADMIN, ...ENV })
  })
  afterAll(() => s?.close())

  /** Buys pack `pack` (0: 5000 credits, 1: 20000) at Checkout; returns the session and the webhook's answer. */
  async function buy(token: string, pack: number) {
    const b = await s.t.req('GET', '/v1/balance', { token })
    const r = await get(s.t, pathOf(b.body.links.packs[pack].url))
    const sid = sessionIdOf(r.headers.get('location')!)
    return { sid, w: await deliver(s.t, await s.stripe.payCheckout(sid)) }
  }
  /** Everything flushed, then Redis restarts empty and `ledger:rebuild --all` restores it. */
  async function loseRedisAndRebuild(): Promise<void> {
    await drain(s.t.s.flusher)
    await redis.kill()
    await redis.start() // empty: no persistence
    const r = await rebuildOf(s.t, ENV, '--all')
    expect(r.code).toBe(0)
  }
  /** Stripe delivers the paid session again, under another event id. */
  const redeliver = async (sid: string) => deliver(s.t, await s.stripe.signedEvent('checkout.session.async_payment_succeeded', s.stripe.sessions.get(sid)!))
  const parkedOf = async (acct: string) =>
    (await s.t.req('GET', '/admin/parked', { token: ADMIN })).body.parked.filter((p: { account_id: string }) => p.account_id === acct)

  test('a charge credited or parked before the loss is a duplicate when Stripe delivers it again: credited once', async () => {
    const x = await s.t.signup()
    const credited = await buy(x.token, 0)
    expect(credited.w.body.result).toBe('credited') // 5500
    const y = await s.t.signup()
    expect((await buy(y.token, 1)).w.body.result).toBe('credited') // 20500 ≤ 30000
    const parked = await buy(y.token, 1)
    expect(parked.w.body.result).toBe('parked') // 40500 > 30000: money taken, the founder decides
    await loseRedisAndRebuild()

    for (const sid of [credited.sid, parked.sid]) {
      const again = await redeliver(sid)
      expect(again.status).toBe(200)
      expect(again.body.result).toBe('duplicate')
    }
    await assertLedger(s.t.s, [
      { account: x.account_id, balance: 5500 },
      { account: y.account_id, balance: 20500 },
    ])
  })

  test('a payment parked before the loss still awaits the founder, who approves it once; a decided one stays decided', async () => {
    const z = await s.t.signup()
    expect((await buy(z.token, 1)).w.body.result).toBe('credited') // 20500
    expect((await buy(z.token, 1)).w.body.result).toBe('parked') // 40500 > 30000
    const decided = await s.t.signup()
    expect((await buy(decided.token, 1)).w.body.result).toBe('credited')
    expect((await buy(decided.token, 1)).w.body.result).toBe('parked')
    const [before] = await parkedOf(decided.account_id)
    expect((await s.t.req('POST', `/admin/parked/${before.id}/approve`, { token: ADMIN })).status).toBe(200) // 40500
    const [waiting] = await parkedOf(z.account_id)
    await loseRedisAndRebuild()

    expect(await parkedOf(decided.account_id)).toEqual([])
    expect(await parkedOf(z.account_id)).toEqual([waiting])
    expect(waiting).toMatchObject({ credits: 20000, kind: 'pack', gateway: 'stripe', state: 'parked' })
    const ok = await s.t.req('POST', `/admin/parked/${waiting.id}/approve`, { token: ADMIN })
    expect(ok.status, ok.text).toBe(200)
    expect(ok.body).toMatchObject({ state: 'approved', credits: 20000, balance: 40500, charge_id: waiting.charge_id })
    expect((await s.t.req('POST', `/admin/parked/${waiting.id}/approve`, { token: ADMIN })).status).toBe(409)
    expect(await parkedOf(z.account_id)).toEqual([])
    await assertLedger(s.t.s, [
      { account: z.account_id, balance: 40500 },
      { account: decided.account_id, balance: 40500 },
    ])
  })
  test('a payment whose refund may have been made (refund_unknown) comes back as such: never approvable, rejected once', async () => {
    const w = await s.t.signup()
    expect((await buy(w.token, 1)).w.body.result).toBe('credited') // 20500
    expect((await buy(w.token, 1)).w.body.result).toBe('parked')
    const [p] = await parkedOf(w.account_id)
    // As rejectParked leaves it when Stripe's answer to the refund never came.
    expect((await decideParked(s.t.s.ctx, p.id, w.account_id, 'claim')).kind).toBe('ok')
    expect((await decideParked(s.t.s.ctx, p.id, w.account_id, 'unknown')).kind).toBe('ok')
    await loseRedisAndRebuild()

    const [back] = await parkedOf(w.account_id)
    // It came back `parked` (or not at all): approvable, crediting money Stripe may have refunded.
    expect(back).toMatchObject({ id: p.id, state: 'refund_unknown' })
    expect((await s.t.req('POST', `/admin/parked/${p.id}/approve`, { token: ADMIN })).status).toBe(409)
    const rejected = await s.t.req('POST', `/admin/parked/${p.id}/reject`, { token: ADMIN })
    expect(rejected.body).toMatchObject({ state: 'rejected' })
    expect(s.stripe.refunds.filter((r) => r.payment_intent === p.charge_id)).toHaveLength(1)
    await drain(s.t.s.flusher)
    await assertLedger(s.t.s, [{ account: w.account_id, balance: 20500 }])
  })
})
