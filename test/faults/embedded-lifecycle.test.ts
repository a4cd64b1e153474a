/**
 * The redis-server the service starts for itself lives and dies with the service, however it ends:
 * `kill <pid>` of `npm start` (npm → bun → redis-server), SIGHUP of the service, and `kill -9` of
 * it (no handler runs) all leave nothing serving. A redis-server left over on our data dir from a
 * service that is gone (an orphan: the service and its watcher were both killed with -9) is not
 * used silently on the next start: it is shut down (its append-only file complete) and replaced by
 * a child of the new service, and the start log says so. The start log names the Redis in use and
 * whether the service started it.
 *
 *   bun test test/faults/embedded-lifecycle.test.ts
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { join } from 'node:path'
import Redis from 'ioredis'
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream'
import { apiProcess, type ApiProcess } from '../helpers/api-process'
import { cleanupAll } from '../helpers/cleanup'
import { createTestDatabase } from '../helpers/harness'
import { freePorts, removeDir, tempDir } from '../helpers/redis-server'

const ROOT = join(import.meta.dir, '..', '..')

let fake: FakeUpstream
let db: Awaited<ReturnType<typeof createTestDatabase>>
beforeAll(async () => {
  fake = startFakeUpstream()
  db = await createTestDatabase()
})
afterAll(() => cleanupAll(() => fake?.stop(), () => db?.drop()))

/** What each test started; afterEach stops whatever is still there, by pid or by port. */
let api: ApiProcess | null = null
let redisPort = 0
let dataDir = ''
const strayPids = new Set<number>()
afterEach(() =>
  cleanupAll(
    () => api?.dispose(),
    () => {
      for (const pid of strayPids) {
        try {
          process.kill(pid, 'SIGKILL')
        } catch {}
      }
      strayPids.clear()
    },
    () => redisPort && shutdownRedis(redisPort),
    () => dataDir && removeDir(dataDir),
    () => {
      api = null
      redisPort = 0
      dataDir = ''
    },
  ),
)

async function shutdownRedis(port: number): Promise<void> {
  const r = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null }).on('error', () => {})
  try {
    await r.connect()
    await r.call('shutdown', 'nosave')
  } catch {}
  r.disconnect()
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ host: '127.0.0.1', port })
    const done = (ok: boolean) => {
      sock.destroy()
      resolve(ok)
    }
    sock.setTimeout(500, () => done(false))
    sock.once('connect', () => done(true))
    sock.once('error', () => done(false))
  })
}

/** True once nothing listens on the port any more (false if something still does after `ms`). */
async function closesWithin(port: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (!(await portOpen(port))) return true
    await Bun.sleep(100)
  }
  return false
}

/** True once the process is gone (and reaped), false if it still runs after `ms`. */
async function goneWithin(pid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (!alive(pid)) return true
    await Bun.sleep(100)
  }
  return false
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** The pids of `pid`'s descendants (ps is POSIX), so that a test can clean up what it left. */
function descendants(pid: number): number[] {
  const rows = Bun.spawnSync(['ps', '-A', '-o', 'pid=,ppid=']).stdout.toString().trim().split('\n')
  const parent = new Map(rows.map((r) => r.trim().split(/\s+/).map(Number) as [number, number]))
  const out: number[] = []
  for (const [child] of parent) {
    for (let p = parent.get(child); p !== undefined && p > 1; p = parent.get(p))
      if (p === pid) {
        out.push(child)
        break
      }
  }
  return out
}

function parentOf(pid: number): number {
  return Number(Bun.spawnSync(['ps', '-o', 'ppid=', '-p', String(pid)]).stdout.toString().trim())
}

interface StartLine {
  redis?: { url: string; started_by_service: boolean; pid?: number; replaced_orphan_pid?: number }
}

/** The service's `listening` log lines, oldest first. */
async function startLines(a: ApiProcess): Promise<StartLine[]> {
  return (await a.log())
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg: string } & StartLine)
    .filter((l) => l.msg === 'listening')
}

/** A service on the quick start's embedded Redis: a loopback REDIS_URL nobody listens on yet. */
async function embeddedService(env: Record<string, string> = {}): Promise<ApiProcess> {
  ;[redisPort] = (await freePorts(1)) as [number]
  dataDir = tempDir('lifecycle')
  api = await apiProcess({
    redisUrl: `redis://127.0.0.1:${redisPort}`,
    databaseUrl: db.url,
    prefix: `lc${redisPort}`,
    fakeUrl: fake.url,
    env: { REDIS_DATA_DIR: join(dataDir, 'redis'), MAIL_DIR: join(dataDir, 'mail'), ...env },
  })
  return api
}

describe('the embedded redis-server ends with the service', () => {
  test('kill -9 of the service: its redis-server stops too (nothing is left serving)', async () => {
    const a = await embeddedService()
    await a.start()
    expect(await portOpen(redisPort)).toBe(true)
    for (const pid of descendants(a.pid!)) strayPids.add(pid)
    await a.kill()
    expect(await closesWithin(redisPort, 10_000)).toBe(true)
  }, 60_000)

  test('SIGHUP of the service stops it and its redis-server', async () => {
    const a = await embeddedService()
    await a.start()
    const pid = a.pid!
    for (const p of descendants(pid)) strayPids.add(p)
    process.kill(pid, 'SIGHUP')
    expect(await closesWithin(Number(new URL(a.url).port), 10_000)).toBe(true)
    expect(await closesWithin(redisPort, 10_000)).toBe(true)
    expect(await goneWithin(pid, 5000)).toBe(true)
  }, 60_000)

  test('`kill <pid>` of `npm start` stops npm, the service and its redis-server', async () => {
    const a = await embeddedService()
    const npm = Bun.spawn(['npm', 'start'], { cwd: ROOT, env: { ...process.env, ...a.env }, stdout: 'ignore', stderr: 'ignore' })
    strayPids.add(npm.pid)
    const until = Date.now() + 30_000
    let up = false
    while (!up && Date.now() < until && npm.exitCode === null) {
      up = await fetch(`${a.url}/status`, { signal: AbortSignal.timeout(1000) }).then(
        (r) => r.status === 200,
        () => false,
      )
      if (!up) await Bun.sleep(100)
    }
    expect(up).toBe(true)
    for (const pid of descendants(npm.pid)) strayPids.add(pid)
    npm.kill('SIGTERM')
    await npm.exited
    const httpPort = Number(new URL(a.url).port)
    expect(await closesWithin(httpPort, 10_000)).toBe(true)
    expect(await closesWithin(redisPort, 10_000)).toBe(true)
    for (const pid of strayPids) expect(await goneWithin(pid, 5000)).toBe(true)
  }, 60_000)
})

describe('the start log and an orphan from an earlier start', () => {
  test('an external Redis: the log names it (no password) and says the service did not start it', async () => {
    // Port 0: the shared Redis is never shut down by afterEach.
    redisPort = 0
    dataDir = tempDir('lifecycle')
    api = await apiProcess({ databaseUrl: db.url, prefix: `lcx${Date.now()}`, fakeUrl: fake.url, env: { REDIS_DATA_DIR: join(dataDir, 'redis'), MAIL_DIR: join(dataDir, 'mail') } })
    await api.start()
    const [line] = await startLines(api)
    expect(line?.redis).toEqual({ url: 'redis://127.0.0.1:6379', started_by_service: false })
  }, 60_000)

  test('a redis-server orphaned on our data dir is shut down and replaced, its data kept, and the log says so', async () => {
    const a = await embeddedService()
    await a.start()
    const [first] = await startLines(a)
    expect(first?.redis).toMatchObject({ url: `redis://127.0.0.1:${redisPort}`, started_by_service: true })
    const signup = await fetch(`${a.url}/v1/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: `orphan-${redisPort}@example.com` }) })
    expect(signup.status).toBe(201)
    const { token } = (await signup.json()) as { token: string }

    // The service and whatever watches its redis-server die at once with -9: the redis-server is
    // orphaned, still serving on our port and our files.
    const orphan = first!.redis!.pid!
    expect(alive(orphan)).toBe(true)
    strayPids.add(orphan)
    const watcher = parentOf(orphan)
    if (watcher !== a.pid) process.kill(watcher, 'SIGKILL')
    await a.kill()
    await Bun.sleep(300)
    expect(alive(orphan)).toBe(true)
    expect(await portOpen(redisPort)).toBe(true)

    await a.start()
    const [, second] = await startLines(a)
    expect(second?.redis).toMatchObject({ url: `redis://127.0.0.1:${redisPort}`, started_by_service: true, replaced_orphan_pid: orphan })
    expect(second!.redis!.pid).not.toBe(orphan)
    expect(await goneWithin(orphan, 5000)).toBe(true)
    // What the orphan held (a Redis-only token hash and the balance) came through its append-only file.
    const balance = await fetch(`${a.url}/v1/balance`, { headers: { authorization: `Bearer ${token}` } })
    expect(balance.status).toBe(200)
    expect(((await balance.json()) as { balance: number }).balance).toBe(500)

    await a.stop()
    expect(await closesWithin(redisPort, 10_000)).toBe(true)
  }, 90_000)
})
