/**
 * What Postgres spends per ledger row the flusher writes, measured alone: the flat paid call's two
 * entries (a debit, a call record) written by the flusher's own sinks (src/ledger/sinks.ts) into a
 * fresh, migrated database, in transactions of `--batch` calls, and the CPU of every postgres
 * process read from /proc around it (µs of CPU per row).
 *
 *   ./node_modules/.bin/bun bench/pg-rows.ts [--calls 40000] [--batch 100] [--alter '<DDL>'] [--fresh]
 *
 * `--fresh` writes as the flusher writes a round of first deliveries (the sinks' `fresh`: no
 * ON CONFLICT probe on the append-only tables);
 * `--alter` runs DDL after the migrations, to measure a schema variant (a collation, an index);
 * PG_ROWS_DETAIL=1 prints the CPU per row of each postgres process (backend, WAL writer, …).
 * "own backends" is the CPU of the connections to this run's database alone (schedstat, ns): the
 * server is shared, and "Postgres" (every postgres process) also counts other clients' work.
 */
import { parseArgs } from 'node:util'
import postgres from 'postgres'
import { openDatabase, type Database } from '../src/db/client'
import type { OutboxEntry } from '../src/write-behind/outbox'
import { SINKS } from '../src/sinks'
import { timeLedId } from '../src/auth/tokens'
import { pidsByComm } from './lib/proc'
import { readFileSync } from 'node:fs'

const { values: opt } = parseArgs({ options: { calls: { type: 'string', default: '40000' }, batch: { type: 'string', default: '100' }, alter: { type: 'string' }, fresh: { type: 'boolean', default: false } } })
const CALLS = Number(opt.calls)
const BATCH = Number(opt.batch)
const ADMIN = process.env.PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

const TICK_US = 1e6 / 100
function pgCpu(): Map<string, number> {
  const m = new Map<string, number>()
  for (const pid of pidsByComm('postgres')) {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim().split(' ').slice(0, 3).join(' ')
      m.set(`${pid} ${cmd}`, (Number(f[11]) + Number(f[12])) * TICK_US)
    } catch {}
  }
  return m
}
const pgCpuUs = () => [...pgCpu().values()].reduce((a, b) => a + b, 0)
/** µs on a CPU of one process (schedstat's first field is ns), 0 once it is gone. */
function runUs(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1000
  } catch {
    return 0
  }
}

const rand = () => Math.random().toString(36).slice(2, 12)
let seq = 0
function callEntries(acct: string): OutboxEntry[] {
  const at = Date.now()
  // The service's call id (src/paid-request/debit.ts): it leads both rows' primary keys.
  const call = `call_${timeLedId(at)}`
  const streamId = `${at}-${seq++}`
  const rec = { call_id: call, slug: 'bench.echo', agent_id: null, charged: 5, refunded: false, outcome: 'ok', http_status: 200, latency_ms: 3, at: new Date(at).toISOString(), account_id: acct }
  return [
    { streamId, kind: 'debit', fields: { kind: 'debit', id: `${call}:debit`, acct, agent: '', amount: '-5', bal: '1000', call, target: 'bench.echo', at: String(at), model: '' } },
    { streamId: `${at}-${seq++}`, kind: 'call', fields: { kind: 'call', id: `${call}:call`, organic: '1', charged: '5', rec: JSON.stringify(rec) } },
  ]
}

async function main() {
  const name = `pgrows_${rand()}`
  const admin = postgres(ADMIN, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${name}`)
  const url = ADMIN.replace(/\/[^/]*$/, `/${name}`)
  const db = await openDatabase({ DATABASE_URL: url, PGLITE_DIR: '' })
  if (opt.alter) {
    const c = postgres(url, { max: 1, onnotice: () => {} })
    await c.unsafe(opt.alter)
    await c.end()
  }
  const accounts = Array.from({ length: 200 }, () => `acct_${rand()}`)
  const write = async (entries: OutboxEntry[]) => {
    const byKind = new Map<string, OutboxEntry[]>()
    for (const e of entries) byKind.set(e.kind, [...(byKind.get(e.kind) ?? []), e])
    await db.db.transaction(async (tx) => {
      for (const [kind, list] of byKind) await SINKS[kind]!(tx as unknown as Database, list, { fresh: opt.fresh })
    })
  }
  // Warm-up: a tenth of the calls, not counted.
  for (let i = 0; i < CALLS / 10; i += BATCH) await write(Array.from({ length: BATCH }, (_, j) => callEntries(accounts[(i + j) % accounts.length]!)).flat())
  const batches = Array.from({ length: Math.ceil(CALLS / BATCH) }, (_, b) => Array.from({ length: BATCH }, (_, j) => callEntries(accounts[(b * BATCH + j) % accounts.length]!)).flat())
  const ownPids = async () => (await admin`select pid from pg_stat_activity where datname = ${name}`).map((r) => Number(r.pid))
  const own0 = await ownPids()
  const ownBefore = new Map(own0.map((p) => [p, runUs(p)]))
  const before = pgCpuUs()
  const per0 = pgCpu()
  const t0 = performance.now()
  for (const b of batches) await write(b)
  const ms = performance.now() - t0
  const us = pgCpuUs() - before
  // A connection the pool opened during the run is counted whole.
  const ownUs = (await ownPids()).reduce((a, p) => a + runUs(p) - (ownBefore.get(p) ?? 0), 0)
  const rows = CALLS * 2
  if (process.env.PG_ROWS_DETAIL) for (const [k, v] of pgCpu()) { const d = v - (per0.get(k) ?? 0); if (d > 0) console.log(`  ${k}: ${(d / rows).toFixed(1)} µs a row`) }
  console.log(`${opt.fresh ? 'fresh ' : ''}batch ${BATCH} calls (${BATCH * 2} rows): ${rows} rows in ${ms.toFixed(0)} ms; Postgres ${(us / rows).toFixed(1)} µs CPU a row, ${((us / rows) * 2).toFixed(1)} a flat call; own backends ${(ownUs / rows).toFixed(1)} a row, ${((ownUs / rows) * 2).toFixed(1)} a flat call`)
  await db.close()
  await admin.unsafe(`drop database ${name} with (force)`)
  await admin.end()
}
await main()
