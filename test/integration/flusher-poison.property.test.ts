/**
 * Property: for random outbox contents (good entries of several kinds with random poison ones
 * among them, across random shards) and a random flusher batch size, after the flusher drains
 *   the entries committed to Postgres (and seen by observers) = the good ones, each once,
 *   the dead letters = the poison ones, each once, and the outbox is empty.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { inArray } from 'drizzle-orm'
import fc from 'fast-check'
import { accounts, calls, ledgerEntries } from '../../src/db/schema'
import { Flusher } from '../../src/write-behind/flusher'
import { SHARDS } from '../../src/redis/keys'
import { startTestApp, type TestApp } from '../helpers/harness'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp()
  await t.s.flusher.ensureGroups()
})
afterAll(async () => {
  await t.close()
})

type Kind = 'account' | 'debit' | 'call'
/** What makes an entry poison: U+0000 in its text, JSON that does not parse, a kind with no sink. */
type Poison = null | 'nul' | 'bad_json' | 'no_sink'

const item = fc.record({
  shard: fc.integer({ min: 0, max: SHARDS - 1 }),
  kind: fc.constantFrom<Kind>('account', 'debit', 'call'),
  poison: fc.oneof({ weight: 3, arbitrary: fc.constant<Poison>(null) }, { weight: 1, arbitrary: fc.constantFrom<Poison>('nul', 'bad_json', 'no_sink') }),
})

let run = 0

/** An entry in the format the Lua scripts write (create-account.lua, debit.lua, record-calls.lua). */
function entry(shard: number, kind: Kind, poison: Poison, tag: string): Record<string, string> {
  const acct = `acc_${String(shard).padStart(2, '0')}_${tag}`
  const nul = poison === 'nul' ? '\u0000' : ''
  const at = String(Date.now())
  const base: Record<string, string> =
    kind === 'account'
      ? { kind, id: `${acct}:account`, acct, email: `${tag}${nul}@example.com`, public_ref: `ref_${tag}`, origin: '', referrer: '', owner: `hash_${tag}`, at }
      : kind === 'debit'
        ? { kind, id: `call_${tag}:debit`, acct, agent: '', amount: '-1', bal: '0', call: `call_${tag}`, target: `test.cheap${nul}`, at }
        : {
            kind,
            id: `call_${tag}:call`,
            rec:
              poison === 'bad_json'
                ? `{"call_id": "call_${tag}"`
                : JSON.stringify({ call_id: `call_${tag}`, account_id: acct, agent_id: null, slug: `test.cheap${nul}`, charged: 1, refunded: false, outcome: 'ok', http_status: 200, latency_ms: 1, at: new Date().toISOString() }),
          }
  return poison === 'no_sink' ? { ...base, kind: `${kind}_v9` } : base
}

/** A kind's poison that the entry can carry (a debit has no JSON of its own to break). */
const effective = (kind: Kind, poison: Poison): Poison => (poison === 'bad_json' && kind !== 'call' ? 'nul' : poison)

async function deadLetterIds(): Promise<string[]> {
  const per = await Promise.all(Array.from({ length: SHARDS }, (_, s) => t.redis.xrange(t.s.ctx.keys.deadLetters(s), '-', '+')))
  return per.flat().map(([, raw]) => raw[raw.indexOf('f:id') + 1]!)
}

test('committed = the good entries, dead letters = the poison ones, each once', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(item, { minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 8 }), async (items, batch) => {
      const r = ++run
      const crafted = items.map((it, i) => ({ ...it, poison: effective(it.kind, it.poison), f: entry(it.shard, it.kind, effective(it.kind, it.poison), `p${r}x${i}${Math.random().toString(36).slice(2, 8)}`) }))
      for (const c of crafted) await t.redis.xadd(t.s.ctx.keys.outbox(c.shard), '*', ...Object.entries(c.f).flat())
      const good = crafted.filter((c) => c.poison === null)
      const bad = crafted.filter((c) => c.poison !== null)

      const flusher = new Flusher(t.s.ctx, t.s.db.db, { batch, intervalMs: 10 })
      const observed: string[] = []
      flusher.observe(async (entries) => void observed.push(...entries.map((e) => e.fields.id!)))
      for (let i = 0; i < 500 && (await flusher.flushOnce()) > 0; i++);

      expect((await flusher.lag()).entries).toBe(0)
      expect(observed.sort()).toEqual(good.map((c) => c.f.id!).sort())
      expect((await deadLetterIds()).sort()).toEqual(bad.map((c) => c.f.id!).sort())

      const ids = (kind: Kind, of: typeof crafted) => of.filter((c) => c.kind === kind).map((c) => c.f)
      const stored = async (of: typeof crafted) => [
        ...(await pick(accounts, accounts.id, ids('account', of).map((f) => f.acct!))),
        ...(await pick(ledgerEntries, ledgerEntries.id, ids('debit', of).map((f) => f.id!))),
        ...(await pick(calls, calls.callId, ids('call', of).map((f) => JSON.parse(f.rec!.endsWith('}') ? f.rec! : '{}').call_id ?? ''))),
      ]
      expect((await stored(good)).length).toBe(good.length)
      expect(await stored(bad)).toEqual([])

      // The next run starts with no dead letters.
      await Promise.all(Array.from({ length: SHARDS }, (_, s) => t.redis.del(t.s.ctx.keys.deadLetters(s))))
    }),
    { numRuns: 30 },
  )
}, 120_000)

/** Rows of `table` whose `column` is one of `values`. */
async function pick(table: typeof accounts | typeof ledgerEntries | typeof calls, column: Parameters<typeof inArray>[0], values: string[]): Promise<unknown[]> {
  if (values.length === 0) return []
  return t.s.db.db.select().from(table as typeof accounts).where(inArray(column, values))
}
