/**
 * A live reshard of a 3-master Redis Cluster under the running app: the slot of one shard moves
 * (with its keys) to another master, as `redis-cli --cluster reshard` moves it when a master is
 * added. The app's client still maps the slot to the old master, so the next commands for it are
 * answered MOVED — inside an auto-pipeline that also carries commands of other slots of that
 * master. Every request must still be answered as before (no 500), and the ledger must hold.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type Redis from 'ioredis'
import { startTestApp, type TestApp } from '../helpers/harness'
import { assertLedger } from '../helpers/invariants'
import { startRedisCluster, type RedisCluster } from './cluster'
import { cleanupAll } from '../helpers/cleanup'

let cluster: RedisCluster
let t: TestApp
beforeAll(async () => {
  cluster = await startRedisCluster(3)
  t = await startTestApp({ env: { REDIS_CLUSTER_NODES: cluster.nodes, LOG: process.env.AUDIT_LOG ?? 'silent' } })
})
afterAll(() =>
  cleanupAll(
    () => t?.close(),
    () => cluster?.stop(),
  ),
)

type Account = Awaited<ReturnType<TestApp['signup']>>

async function holder(acct: string): Promise<number> {
  const key = t.s.ctx.keys.account(acct)
  const owners = await Promise.all(cluster.masterClients().map((m) => m.exists(key).catch(() => 0)))
  return owners.indexOf(1)
}

/** Moves one slot, with its keys, from master `from` to master `to` (what redis-cli --cluster reshard does). */
async function moveSlot(slot: number, from: Redis, to: Redis, toPort: number): Promise<void> {
  const [fromId, toId] = (await Promise.all([from.cluster('MYID'), to.cluster('MYID')])) as [string, string]
  await to.cluster('SETSLOT', slot, 'IMPORTING', fromId)
  await from.cluster('SETSLOT', slot, 'MIGRATING', toId)
  for (;;) {
    const keys = (await from.cluster('GETKEYSINSLOT', slot, 100)) as string[]
    if (keys.length === 0) break
    await from.migrate('127.0.0.1', toPort, '', 0, 5000, 'KEYS', ...keys)
  }
  for (const m of cluster.masterClients()) await m.cluster('SETSLOT', slot, 'NODE', toId)
}

const call = (token: string) => t.req('POST', '/v1/call/test.cheap', { token, body: { q: 'reshard' } })

describe('a live reshard under the app', () => {
  test('calls of a moved shard and of the shards left on its old master, in the same turns, all succeed', async () => {
    const { keys } = t.s.ctx
    // Two accounts of different shards on one master.
    const byMaster = new Map<number, Map<number, Account>>()
    let pair: Account[] | null = null
    for (let i = 0; i < 300 && !pair; i++) {
      const a = await t.signup()
      const m = await holder(a.account_id)
      const shards = byMaster.get(m) ?? new Map<number, Account>()
      byMaster.set(m, shards)
      shards.set(keys.shardOf(a.account_id), a)
      if (shards.size >= 2) pair = [...shards.values()].slice(0, 2)
    }
    expect(pair).not.toBeNull()
    const [moved, stays] = pair!
    // Warm: the client has its slot map.
    for (const a of pair!) expect((await call(a.token)).status).toBe(200)

    const masters = cluster.masterClients()
    const from = await holder(moved!.account_id)
    const toIdx = (from + 1) % 3
    const slot = (await masters[from]!.cluster('KEYSLOT', keys.account(moved!.account_id))) as number
    await moveSlot(slot, masters[from]!, masters[toIdx]!, cluster.ports[toIdx]!)
    expect(await holder(moved!.account_id)).toBe(toIdx)

    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => call((i % 2 ? moved : stays)!.token)))
    const bad = answers.filter((r) => r.status !== 200)
    expect(bad.map((r) => `${r.status} ${r.text.slice(0, 200)}`)).toEqual([])
    // And after: balances and reads of both.
    for (const a of pair!) expect((await t.req('GET', '/v1/balance', { token: a.token })).status).toBe(200)
    await assertLedger(t.s, [
      { account: moved!.account_id, balance: 500 - 21 },
      { account: stays!.account_id, balance: 500 - 21 },
    ])
  })
})
