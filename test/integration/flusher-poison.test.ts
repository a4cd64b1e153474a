/**
 * One bad outbox entry must never stop the write-behind. Poison entries (copies of real entries,
 * written with XADD in the scripts' own format, with data Postgres refuses) sit between good ones
 * on several shards: every good entry commits exactly once, each poison one is dead-lettered
 * exactly once and shown to the founder, /status says so until the founder replays or discards
 * it, and Postgres being unreachable dead-letters nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { inArray, sql } from 'drizzle-orm'
import { accounts as accountsTable } from '../../src/db/schema'
import { connectPostgres } from '../../src/db/client'
import { Flusher } from '../../src/write-behind/flusher'
import { parseOutboxEntry } from '../../src/write-behind/outbox'
import { SHARDS } from '../../src/redis/keys'
import { startTcpProxy, type TcpProxy } from '../fakes/tcp-proxy'
import { pgUrl, startTestApp, type TestApp } from '../helpers/harness'
import { flushAll, pgLedger, redisBalance } from '../helpers/ledger'

const ADMIN = 'founder-secret-0123456789abcdef'
let t: TestApp
let pgRelay: TcpProxy
beforeAll(async () => {
  pgRelay = await startTcpProxy('127.0.0.1', 5432)
  t = await startTestApp({ env: { ADMIN_TOKEN: ADMIN } })
  await t.s.flusher.ensureGroups()
})
afterAll(async () => {
  await t.close()
  await pgRelay.close()
})

type Fields = Record<string, string>
const admin = (method: string, path: string) => t.req(method, path, { token: ADMIN })

/** A shard's entries through the one parser (a packed debit as the debit entry it stands for). */
async function outbox(shard: number): Promise<{ id: string; f: Fields }[]> {
  const rows = await t.redis.xrange(t.s.ctx.keys.outbox(shard), '-', '+')
  return rows.flatMap(([id, raw]) => parseOutboxEntry(id, raw).map((e) => ({ id, f: e.fields })))
}

/**
 * Appends an entry the way the Lua scripts do (field order kept); returns its entry id (unique,
 * unlike a stream id, which two shards' streams may both hold).
 */
const xadd = async (shard: number, f: Fields) => {
  await t.redis.xadd(t.s.ctx.keys.outbox(shard), '*', ...Object.entries(f).flat())
  return f.id!
}

const rand = () => Math.random().toString(36).slice(2, 10)

/** Accounts on at least `n` distinct shards, one per shard. */
async function accountsOnShards(n: number) {
  const byShard = new Map<number, { token: string; account_id: string }>()
  for (let i = 0; i < 60 && byShard.size < n; i++) {
    const a = await t.signup()
    const s = t.s.ctx.keys.shardOf(a.account_id)
    if (!byShard.has(s)) byShard.set(s, a)
  }
  expect(byShard.size).toBe(n)
  return [...byShard.entries()].map(([shard, a]) => ({ shard, ...a }))
}

const allEntries = async () => (await Promise.all(Array.from({ length: SHARDS }, (_, s) => outbox(s)))).flat()

/** A call is filed just after its answer: waits until every debit in the outbox has its call entry. */
async function filed(): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const kinds = (await allEntries()).map((e) => e.f.kind)
    if (kinds.filter((k) => k === 'call').length >= kinds.filter((k) => k === 'debit').length) return
    await Bun.sleep(20)
  }
  throw new Error('calls were not filed')
}

const calls = async (token: string, n: number) => {
  const rs = await Promise.all(Array.from({ length: n }, () => t.req('POST', '/v1/call/test.cheap', { token, body: {} })))
  await filed()
  return rs
}

/** Poison made from a shard's real entries: the same fields, new ids, data Postgres refuses. */
async function injectPoison(shard: number, acct: string): Promise<Record<string, string>> {
  const real = await outbox(shard)
  const account = real.find((e) => e.f.kind === 'account' && e.f.acct === acct)!.f
  const debit = real.find((e) => e.f.kind === 'debit' && e.f.acct === acct)!.f
  const call = real.find((e) => e.f.kind === 'call')!.f
  const nulAcct = `acc_${String(shard).padStart(2, '0')}_nul${rand()}`
  const dupAcct = `acc_${String(shard).padStart(2, '0')}_dup${rand()}`
  const badAt = `acc_${String(shard).padStart(2, '0')}_bat${rand()}`
  return {
    // U+0000 in a text column (22021 invalid byte sequence).
    [await xadd(shard, { ...account, id: `${nulAcct}:account`, acct: nulAcct, email: `nul\u0000${rand()}@example.com`, public_ref: rand() })]: 'nul_account',
    // U+0000 in a JSON string (22P05 unsupported Unicode escape).
    [await xadd(shard, { ...debit, id: `call_nul${rand()}:debit`, call: `call_nul${rand()}`, target: 'test.cheap\u0000' })]: 'nul_debit',
    // A record that is not JSON (22P02).
    [await xadd(shard, { ...call, id: `call_bad${rand()}:call`, rec: '{"call_id": ' })]: 'bad_call',
    // Another account with the email of the real one before it (23505): fixable, replayed below.
    [await xadd(shard, { ...account, id: `${dupAcct}:account`, acct: dupAcct, public_ref: rand() })]: 'dup_account',
    // A time no Date can hold: the sink itself throws (a JS RangeError, not Postgres' refusal).
    [await xadd(shard, { ...account, id: `${badAt}:account`, acct: badAt, email: `at-${rand()}@example.com`, public_ref: rand(), at: 'yesterday' })]: 'bad_at',
    // A kind this flusher has no sink for (a future kind, or a bug).
    [await xadd(shard, { kind: 'future_kind', id: `fk_${rand()}`, acct })]: 'future_kind',
  }
}

describe('a poison outbox entry', () => {
  test('good entries commit once, poison ones are dead-lettered once, and /status says so until the founder acts', async () => {
    const accounts = await accountsOnShards(3)
    for (const a of accounts) expect((await calls(a.token, 3)).every((r) => r.status === 200)).toBe(true)
    const poison: Record<string, string> = {}
    for (const a of accounts) Object.assign(poison, await injectPoison(a.shard, a.account_id))
    const later = await Promise.all(accounts.map(() => t.signup()))
    for (const a of accounts) expect((await calls(a.token, 2)).every((r) => r.status === 200)).toBe(true)

    const all = await allEntries()
    const good = all.filter((e) => !poison[e.f.id!]).map((e) => e.f.id!)
    expect(Object.keys(poison)).toHaveLength(18)
    const observed: string[] = []
    t.s.flusher.observe(async (entries) => void observed.push(...entries.map((e) => e.fields.id!)))

    await flushAll(t)

    expect((await t.s.flusher.lag()).entries).toBe(0)
    // Observers saw every good entry once and no poison.
    expect(observed.sort()).toEqual(good.sort())
    for (const a of [...accounts, ...later]) {
      const entries = await pgLedger(t, a.account_id)
      expect(entries.count).toBe(entries.distinct)
      expect(entries.sum).toBe(await redisBalance(t, a.account_id))
    }
    const accountIds = (kind: 'good' | 'poison') => all.filter((e) => e.f.kind === 'account' && !poison[e.f.id!] === (kind === 'good')).map((e) => e.f.acct!)
    const inPostgres = async (ids: string[]) => (await t.s.db.db.select({ id: accountsTable.id }).from(accountsTable).where(inArray(accountsTable.id, ids))).map((r) => r.id).sort()
    expect(await inPostgres(accountIds('good'))).toEqual(accountIds('good').sort())
    expect(await inPostgres(accountIds('poison'))).toEqual([])

    const list = await admin('GET', '/admin/dead-letters')
    expect(list.status, list.text).toBe(200)
    expect(list.body.count).toBe(18)
    const dead = list.body.dead_letters as { id: string; shard: number; kind: string; error: string; entry: Fields; at: string; source_id: string }[]
    expect(dead.map((d) => d.entry.id!).sort()).toEqual(Object.keys(poison).sort())
    for (const d of dead) {
      const original = all.find((e) => e.f.id === d.entry.id)!
      expect(d.entry).toEqual(original.f)
      expect(d.source_id).toBe(original.id)
      expect(d.kind).toBe(original.f.kind!)
      expect(d.shard).toBe(accounts.find((a) => d.id.startsWith(`dl_${String(a.shard).padStart(2, '0')}_`))!.shard)
      expect(d.error).toMatch({ nul_account: /^22021/, nul_debit: /^22P05/, bad_call: /^22P02/, dup_account: /^23505/, future_kind: /no sink/, bad_at: /^Invalid Date$/ }[poison[d.entry.id!]!]!)
      expect(Date.parse(d.at)).toBeGreaterThan(0)
    }

    let status = await t.req('GET', '/status')
    expect(status.body.status).toBe('degraded')
    expect(status.body.degraded.map((r: { reason: string }) => r.reason)).toEqual(['dead_letters'])
    const metrics = await t.req('GET', '/metrics')
    expect(metrics.text).toMatch(/^pab_dead_letters 18$/m)
    expect(metrics.text).toMatch(/^pab_ledger_lag_entries 0$/m)

    // The cause of the duplicates is fixed (the founder frees the email); replayed, they commit.
    for (const a of accounts) await t.s.db.db.execute(sql`update accounts set email = ${`freed-${a.account_id}@example.com`} where id = ${a.account_id}`)
    const dups = dead.filter((d) => poison[d.entry.id!] === 'dup_account')
    for (const d of dups) expect((await admin('POST', `/admin/dead-letters/${d.id}/replay`)).body.state).toBe('requeued')
    expect((await admin('POST', `/admin/dead-letters/${dups[0]!.id}/replay`)).status).toBe(404) // once
    // A replay whose cause is not fixed comes back as a new dead letter.
    const nul = dead.find((d) => poison[d.entry.id!] === 'nul_account')!
    expect((await admin('POST', `/admin/dead-letters/${nul.id}/replay`)).status).toBe(200)
    await flushAll(t)
    for (const d of dups) {
      const rows = (await t.s.db.db.execute(sql`select email from accounts where id = ${d.entry.acct!}`)) as unknown as { email: string }[]
      expect(rows.map((r) => r.email)).toEqual([d.entry.email!])
    }
    const after = (await admin('GET', '/admin/dead-letters')).body
    expect(after.count).toBe(18 - dups.length)
    expect(after.dead_letters.filter((d: { entry: Fields }) => d.entry.acct === nul.entry.acct)).toHaveLength(1)

    // Discarded after review, they stop degrading /status.
    for (const d of after.dead_letters) expect((await admin('DELETE', `/admin/dead-letters/${d.id}`)).body.state).toBe('discarded')
    expect((await admin('DELETE', `/admin/dead-letters/${after.dead_letters[0].id}`)).status).toBe(404)
    status = await t.req('GET', '/status')
    expect([status.body.status, status.body.degraded]).toEqual(['ok', []])
    expect((await t.req('GET', '/metrics')).text).toMatch(/^pab_dead_letters 0$/m)
  })

  test('an entry already in Postgres delivered again as new (no conflict check on a first delivery): written once, nothing dead-lettered', async () => {
    const [a] = await accountsOnShards(1)
    await calls(a!.token, 3)
    const shardEntries = await outbox(a!.shard)
    const debits = shardEntries.filter((e) => e.f.kind === 'debit' && e.f.acct === a!.account_id)
    const callIds = new Set(debits.map((e) => `${e.f.call}:call`))
    const committed = [...debits, ...shardEntries.filter((e) => e.f.kind === 'call' && callIds.has(e.f.id!))]
    expect(committed).toHaveLength(6)
    await flushAll(t)
    const before = await t.s.flusher.deadLetters()
    // Copies of committed entries, appended anew: a first delivery to the flusher, the rows already there.
    for (const e of committed) await xadd(a!.shard, e.f)
    await calls(a!.token, 2)
    await flushAll(t)
    expect((await t.s.flusher.lag()).entries).toBe(0)
    expect(await t.s.flusher.deadLetters()).toBe(before)
    const entries = await pgLedger(t, a!.account_id)
    expect(entries.count).toBe(entries.distinct)
    expect(entries.sum).toBe(await redisBalance(t, a!.account_id))
    // The round's new calls committed too: 1 grant + 5 debits.
    expect(entries.count).toBe(6)
  })

  test('Postgres unreachable: nothing is dead-lettered; the poison is found once Postgres is back', async () => {
    const flusher = new Flusher(t.s.ctx, connectPostgres(relayUrl(), 2).db, { batch: 50, intervalMs: 10 })
    const [a] = await accountsOnShards(1)
    await calls(a!.token, 3)
    const poison = await injectPoison(a!.shard, a!.account_id)
    await calls(a!.token, 3)
    const before = await t.s.flusher.deadLetters()
    pgRelay.down()
    for (let i = 0; i < 3; i++) await expect(flusher.flushOnce()).rejects.toThrow()
    expect(flusher.stats().deadLettered).toBe(0)
    expect(await t.s.flusher.deadLetters()).toBe(before)
    const waiting = (await outbox(a!.shard)).map((e) => e.f.id)
    for (const id of Object.keys(poison)) expect(waiting).toContain(id)
    pgRelay.up()
    for (let i = 0; i < 20 && (await flusher.flushOnce()) > 0; i++);
    expect((await t.s.flusher.lag()).entries).toBe(0)
    expect(await t.s.flusher.deadLetters()).toBe(before + 6)
    expect((await pgLedger(t, a!.account_id)).sum).toBe(await redisBalance(t, a!.account_id))
    for (const d of (await admin('GET', '/admin/dead-letters')).body.dead_letters) await admin('DELETE', `/admin/dead-letters/${d.id}`)
  })
})

function relayUrl(): string {
  const u = new URL(pgUrl(t.db.name))
  u.port = String(pgRelay.port)
  return u.toString()
}
