/**
 * One master of a 3-master Redis Cluster loses its data (restarted without persistence, a fresh
 * replica promoted), while the others keep theirs, and `ledger:rebuild --all` (or the automatic
 * rebuild) brings the ledger back. On one Redis a loss is all or nothing; on a cluster the global
 * lookups (`P:tok:`, `P:email:`, `P:ref:`, `P:mref:`) hash to any master, so a master's loss takes
 * lookups of accounts whose hashes live on the masters that kept theirs. Every account must work
 * again afterwards, on an instance that never saw its tokens.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { startTestApp, type TestApp } from '../helpers/harness'
import { assertLedger } from '../helpers/invariants'
import { flushAll } from '../helpers/ledger'
import { startRedisCluster, type RedisCluster } from './cluster'
import { cleanupAll } from '../helpers/cleanup'

const ROOT = join(import.meta.dir, '..', '..')
let cluster: RedisCluster
let t: TestApp
let fresh: TestApp | null = null
let third: TestApp | null = null
let accounts: Account[] = []
beforeAll(async () => {
  cluster = await startRedisCluster(3)
  t = await startTestApp({ env: { REDIS_CLUSTER_NODES: cluster.nodes } })
})
afterAll(() =>
  cleanupAll(
    () => third?.s.close(),
    () => fresh?.s.close(),
    () => t?.close(),
    () => cluster?.stop(),
  ),
)

type Account = Awaited<ReturnType<TestApp['signup']>> & { agent: string; email: string }

async function holder(acct: string): Promise<number> {
  const key = t.s.ctx.keys.account(acct)
  const owners = await Promise.all(cluster.masterClients().map((m) => m.exists(key).catch(() => 0)))
  return owners.indexOf(1)
}

/** Every account answers on `app`: owner and agent tokens, its e-mail claim, its public_ref. */
async function check(app: TestApp, balance: number, slug: string): Promise<string[]> {
  const failures: string[] = []
  for (const a of accounts) {
    const bal = await app.req('GET', '/v1/balance', { token: a.token })
    if (bal.status !== 200 || bal.body.balance !== balance) failures.push(`${a.account_id} owner: ${bal.status} ${bal.text.slice(0, 120)}`)
    const c = await app.req('POST', `/v1/call/${slug}`, { token: a.agent, body: { q: 'y' } })
    if (c.status !== 200) failures.push(`${a.account_id} agent: ${c.status} ${c.text.slice(0, 120)}`)
    const again = await app.req('POST', '/v1/signup', { body: { email: a.email } })
    if (again.body?.error !== 'EMAIL_EXISTS') failures.push(`${a.account_id} email claim: ${again.status} ${again.text.slice(0, 120)}`)
    const ref = (await app.req('POST', '/v1/signup', { body: { email: `ref-${slug}-${a.account_id}@example.com`, referred_by: a.public_ref } })).status
    if (ref !== 201) failures.push(`${a.account_id} public_ref: ${ref}`)
  }
  return failures
}

async function rebuildAll(): Promise<{ code: number; err: string }> {
  const p = Bun.spawn([process.execPath, 'run', 'ledger:rebuild', '--all'], {
    cwd: ROOT,
    env: { ...process.env, REDIS_URL: '', REDIS_CLUSTER_NODES: cluster.nodes, REDIS_KEY_PREFIX: t.prefix, DATABASE_URL: t.db.url, LOG: 'silent' },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  return { code, err }
}

describe('one master of the cluster loses its data', () => {
  test('ledger:rebuild --all brings back every account, its tokens and lookups included', async () => {
    const byMaster = new Map<number, Account[]>()
    for (let i = 0; i < 300 && [...byMaster.values()].filter((l) => l.length >= 3).length < 3; i++) {
      const email = `rb${i}-${t.prefix}@example.com`
      const a = await t.signup(email)
      const m = await holder(a.account_id)
      const list = byMaster.get(m) ?? []
      if (list.length >= 3) continue
      const agent = (await t.req('POST', '/v1/agents', { token: a.token, body: { name: 'a' } })).body.token as string
      expect((await t.req('POST', '/v1/call/test.echo', { token: agent, body: { q: 'x' } })).status).toBe(200)
      list.push({ ...a, agent, email })
      byMaster.set(m, list)
    }
    accounts = [...byMaster.values()].flat()
    expect(accounts).toHaveLength(9)
    await flushAll(t)

    const lost = 0
    await cluster.masterClients()[lost]!.flushall()
    const r = await rebuildAll()
    expect(r.code, r.err).toBe(0)

    // A new instance (an API restarted, or one that never served these tokens): nothing cached.
    fresh = await startTestApp({ database: t.db, prefix: t.prefix, env: { REDIS_CLUSTER_NODES: cluster.nodes } })
    const failures = await check(fresh, 495, 'test.cheap')
    expect(failures).toEqual([])
    await assertLedger(fresh.s, accounts.map((a) => ({ account: a.account_id, balance: 494 })))
  })

  test('the automatic rebuild of a running instance does the same after another master’s loss', async () => {
    await flushAll(fresh!)
    await cluster.masterClients()[1]!.flushall()
    fresh!.s.ledger.start()
    for (let i = 0; i < 200 && !(await fresh!.s.ledger.check().then(() => fresh!.s.ledger.isOpen)); i++) await Bun.sleep(50)
    expect(fresh!.s.ledger.isOpen).toBe(true)
    third = await startTestApp({ database: t.db, prefix: t.prefix, env: { REDIS_CLUSTER_NODES: cluster.nodes } })
    expect(await check(third, 494, 'test.echo')).toEqual([])
    await assertLedger(third.s, accounts.map((a) => ({ account: a.account_id, balance: 489 })))
  })
})
