/**
 * The zero-setup path of the quick start: when no Redis answers at REDIS_URL and that URL points
 * at this machine, start a `redis-server` child on its port; otherwise exit with a clear message.
 * The child keeps an append-only file in REDIS_DATA_DIR (next to PGlite's files), fsynced every
 * second: a restart of the service keeps every account, and a power cut loses at most about a
 * second of acknowledged debits (docs/operations.md).
 *
 * The child ends with the service however the service ends (tied-child.ts), and a redis-server
 * left on our data dir by a service that is gone is shut down and replaced, never used silently
 * (embedded-owner.ts). The start log says which Redis is used and whether the service started it.
 */
import { mkdirSync } from 'node:fs'
import { connect } from 'node:net'
import { resolve } from 'node:path'
import { withoutPassword, type Config } from '../config'
import { clearOwner, identify, shutDown, writeOwner } from './embedded-owner'
import { spawnTied } from './tied-child'

function reachable(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ host, port })
    const done = (ok: boolean) => {
      sock.destroy()
      resolve(ok)
    }
    sock.setTimeout(timeoutMs, () => done(false))
    sock.once('connect', () => done(true))
    sock.once('error', () => done(false))
  })
}

async function until(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms
  while (Date.now() < end) {
    if (await check()) return true
    await Bun.sleep(100)
  }
  return false
}

/** The `redis` field of the start log line. */
export interface RedisUse {
  /** REDIS_URL without its password (or the cluster's nodes). */
  url: string
  started_by_service: boolean
  /** The redis-server's pid, when this service started it or found it running on our data dir. */
  pid?: number
  /** The pid of an orphan found on our data dir and shut down before this child took over. */
  replaced_orphan_pid?: number
  /** The running service that started the Redis this one shares (same data dir). */
  owner_pid?: number
}

export interface RedisInUse {
  use: RedisUse
  /** Stops the child this service started (its append-only file written out); nothing otherwise. */
  stop(): Promise<void>
}

const notOurs = (use: RedisUse): RedisInUse => ({ use, stop: async () => {} })

function fail(message: string): never {
  console.error(message)
  process.exit(2)
}

export async function ensureRedis(cfg: Config): Promise<RedisInUse> {
  if (cfg.REDIS_CLUSTER_NODES) return notOurs({ url: cfg.REDIS_CLUSTER_NODES, started_by_service: false })
  const shown = withoutPassword(cfg.REDIS_URL)
  const url = new URL(cfg.REDIS_URL)
  const host = url.hostname || '127.0.0.1'
  const port = Number(url.port || 6379)
  const local = ['127.0.0.1', 'localhost', '[::1]', '::1'].includes(host)
  const dir = resolve(cfg.REDIS_DATA_DIR)
  let replaced: number | undefined
  if (await reachable(host, port)) {
    const found = local ? await identify(cfg.REDIS_URL, dir) : ({ kind: 'foreign' } as const)
    if (found.kind === 'foreign') return notOurs({ url: shown, started_by_service: false })
    if (found.kind === 'owned') return notOurs({ url: shown, started_by_service: false, pid: found.pid, owner_pid: found.owner_pid })
    console.error(`redis-server (pid ${found.pid}) on ${host}:${port} runs on ${dir} but the service that started it is gone: shutting it down and starting a new one`)
    await shutDown(found.client)
    if (!(await until(async () => !(await reachable(host, port)), 10_000))) fail(`the orphaned redis-server (pid ${found.pid}) on port ${port} did not stop; stop it, then start again`)
    replaced = found.pid
  }
  if (!local) fail(`Redis is not reachable at ${shown}. Start it, or point REDIS_URL at a running Redis.`)
  const bin = Bun.which('redis-server')
  if (!bin) fail(`No Redis at ${shown} and no redis-server on the PATH. Install Redis (e.g. apt-get install redis-server) or set REDIS_URL.`)
  mkdirSync(dir, { recursive: true })
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec']
  const child = await spawnTied(bin, args)
  if (!(await until(async () => !child.running() || (await reachable(host, port)), 10_000)) || !child.running())
    fail(`redis-server did not come up on port ${port}`)
  writeOwner(dir, { service_pid: process.pid, redis_pid: child.pid })
  console.error(`started redis-server on ${host}:${port} (pid ${child.pid}); append-only file in ${dir} (fsync every second)`)
  return {
    use: { url: shown, started_by_service: true, pid: child.pid, ...(replaced ? { replaced_orphan_pid: replaced } : {}) },
    async stop() {
      await child.stop()
      clearOwner(dir, process.pid)
    },
  }
}
