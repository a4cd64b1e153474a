/**
 * A batch's flat debits are one outbox entry (`packed_debits`, lua/debit.lua in the batch wrapper of
 * src/redis/batched-scripts.ts): the flusher lands it as one ledger row per debit, all with the one
 * stream id, and the statement (GET /v1/ledger) still lists them in call order with a running
 * balance_after, across its keyset pages (src/ledger/statement.ts). One that Postgres refuses a line
 * of, or whose line does not unpack, is dead-lettered whole: no row of it is filed beside it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { hashToken } from '../../src/auth/tokens'
import { statementEntries } from '../../src/ledger/statement'
import { runDebit, type DebitArgs } from '../../src/lua/debit'
import { windowsAt } from '../../src/windows'
import { startTestApp, type TestApp } from '../helpers/harness'
import { flushAll } from '../helpers/ledger'

const ADMIN = 'founder-secret-0123456789abcdef'
let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { ADMIN_TOKEN: ADMIN } })
  await t.s.flusher.ensureGroups()
})
afterAll(async () => {
  await t?.close()
})

const rand = () => Math.random().toString(36).slice(2, 10)

/** One owner debit of `price`, as the paid call sends it. */
function debitArgs(acct: string, token: string, callId: string, price: number): DebitArgs {
  const now = t.clock.now()
  const w = windowsAt(now)
  return {
    now, accountId: acct, agentId: null, tokenHash: hashToken(token), target: 'test.cheap', price, unpriced: false, callId, day: w.day,
    rateWindow: w.rate, prevRateWindow: w.prevRate, rateLimit: 1_000, defaultDailyCap: 1_000_000, unpricedRequestCap: 100, dayKeyTtlS: 172_800,
    breakerCreditsPerMinute: 0, breakerIdenticalPerMinute: 0, lowBalanceAlert: 0, abandonAt: now + 60_000,
  }
}

const jsonl = (text: string) => text.trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>)

describe("a batch's debits entry (packed_debits)", () => {
  test('lands as one ledger row per debit under one stream id; the statement lists them in call order, balance_after running, on any page size', async () => {
    const a = await t.signup()
    await flushAll(t)
    const shard = t.s.ctx.keys.shardOf(a.account_id)
    const before = (await t.redis.xrange(t.s.ctx.keys.outbox(shard), '-', '+')).length
    // Call ids sorting against the call order: a tie on the stream id broken by the id alone reverses them.
    const prices = [1, 2, 3, 4, 5, 6]
    const ids = prices.map((_, i) => `call_z${9 - i}${rand()}`)
    const rs = await Promise.all(prices.map((p, i) => runDebit(t.s.ctx, debitArgs(a.account_id, a.token, ids[i]!, p))))
    expect(rs.map((r) => r.status)).toEqual(prices.map(() => 'ok'))
    const added = (await t.redis.xrange(t.s.ctx.keys.outbox(shard), '-', '+')).slice(before)
    expect(added.map(([, f]) => f[1])).toEqual(['packed_debits'])

    await flushAll(t)
    const rows = (await t.s.db.db.execute(
      sql`select call_id, stream_id, balance_after from ledger_entries where account_id = ${a.account_id} and kind = 'debit'`,
    )) as unknown as { call_id: string; stream_id: string; balance_after: string }[]
    expect(rows.map((r) => r.call_id).sort()).toEqual([...ids].sort())
    expect(new Set(rows.map((r) => r.stream_id))).toEqual(new Set([added[0]![0]]))

    const r = await t.req('GET', '/v1/ledger', { token: a.token })
    expect(r.status).toBe(200)
    const entries = jsonl(r.text).filter((l) => l.type === 'entry')
    expect(entries.map((e) => e.call_id).slice(1)).toEqual(ids)
    const running = (list: { amount: number; balance_after: number }[]) => {
      for (let i = 1; i < list.length; i++) expect(list[i]!.balance_after).toBe(list[i - 1]!.balance_after + list[i]!.amount)
    }
    running(entries as { amount: number; balance_after: number }[])
    // Keyset pages that cut through the batch's entries give the same list.
    const range = { from: new Date(0), to: new Date(t.clock.now() + 1) }
    for (const page of [1, 2, 3]) {
      const paged = []
      for await (const e of statementEntries(t.s.db.db, a.account_id, range, page)) paged.push(e)
      expect(paged.map((e) => e.id)).toEqual(entries.map((e) => e.id))
      running(paged)
    }
  })

  test('one Postgres refuses a line of, or whose line does not unpack, is dead-lettered whole; the lines Postgres takes and the entries around it commit', async () => {
    const a = await t.signup()
    await flushAll(t)
    const shard = t.s.ctx.keys.shardOf(a.account_id)
    const outbox = t.s.ctx.keys.outbox(shard)
    const line = (call: string, bal: number, target = 'test.cheap') => `${a.account_id}||-1|${bal}|${call}|${t.clock.now()}|${target}`
    const c = Array.from({ length: 8 }, (_, i) => `call_p${i}${rand()}`)
    const add = async (...f: string[]) => (await t.redis.xadd(outbox, '*', ...f))!
    const good1 = await add('kind', 'packed_debits', 'd', [line(c[0]!, 99), line(c[1]!, 98)].join('\n'))
    // U+0000 in the target (22P05, as flusher-poison.test.ts's nul_debit): Postgres refuses the middle
    // line; the lines around it commit, and the entry is dead-lettered whole (a replay adds only the
    // refused one: the others' rows are there already), as a folded settle's is.
    const nul = await add('kind', 'packed_debits', 'd', [line(c[2]!, 97), line(c[3]!, 96, 'test.cheap\u0000'), line(c[4]!, 95)].join('\n'))
    const bad = await add('kind', 'packed_debits', 'd', [line(c[5]!, 94), `${a.account_id}|-1|93`].join('\n'))
    const good2 = await add('kind', 'packed_debit', 'd', line(c[6]!, 93))
    await flushAll(t)

    const filed = (
      (await t.s.db.db.execute(sql`select call_id, stream_id from ledger_entries where account_id = ${a.account_id} and kind = 'debit'`)) as unknown as { call_id: string; stream_id: string }[]
    ).map((r) => [r.call_id, r.stream_id])
    expect(filed.sort()).toEqual([[c[0], good1], [c[1], good1], [c[2], nul], [c[4], nul], [c[6], good2]].sort() as string[][])

    const list = await t.req('GET', '/admin/dead-letters', { token: ADMIN })
    expect(list.status, list.text).toBe(200)
    const dead = (list.body.dead_letters as { id: string; kind: string; error: string; entry: Record<string, string>; source_id: string }[]).filter((d) =>
      [nul, bad].includes(d.source_id),
    )
    // Listed as written: kind packed_debits, its lines in `d` (one dead letter, replayed or discarded whole).
    expect(dead.map((d) => [d.source_id, d.kind, d.entry.d!.split('\n').length])).toEqual([
      [nul, 'packed_debits', 3],
      [bad, 'packed_debits', 2],
    ])
    expect(dead[0]!.error).toMatch(/^22P05/)
    expect(dead[1]!.error).toMatch(/no sink/)
    for (const d of dead) expect((await t.req('DELETE', `/admin/dead-letters/${d.id}`, { token: ADMIN })).status).toBe(200)
  })
})
