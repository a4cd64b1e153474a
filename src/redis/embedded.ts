/**
 * The zero-setup path of the quick start: when no Redis answers at REDIS_URL and that URL points
 * at this machine, start a `redis-server` child on its port; otherwise exit with a clear message.
 * The child keeps an append-only file in REDIS_DATA_DIR (next to PGlite's files), fsynced every
 * second: a restart of the service keeps every account, and a power cut loses at most about a
 * second of acknowledged debits (docs/operations.md).
 */
import { mkdirSync } from 'node:fs'
import { connect } from 'node:net'
import { resolve } from 'node:path'
import { withoutPassword, type Config } from '../config'

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

export interface EmbeddedRedis {
  /** SIGTERM, then waits: Redis writes its append-only file out before the next start reads it. */
  stop(): Promise<void>
}

/** Returns the child it started, or null when a Redis was already there. */
export async function ensureRedis(cfg: Config): Promise<EmbeddedRedis | null> {
  if (cfg.REDIS_CLUSTER_NODES) return null
  const url = new URL(cfg.REDIS_URL)
  const host = url.hostname || '127.0.0.1'
  const port = Number(url.port || 6379)
  if (await reachable(host, port)) return null
  if (!['127.0.0.1', 'localhost', '::1'].includes(host)) {
    console.error(`Redis is not reachable at ${withoutPassword(cfg.REDIS_URL)}. Start it, or point REDIS_URL at a running Redis.`)
    process.exit(2)
  }
  const bin = Bun.which('redis-server')
  if (!bin) {
    console.error(`No Redis at ${withoutPassword(cfg.REDIS_URL)} and no redis-server on the PATH. Install Redis (e.g. apt-get install redis-server) or set REDIS_URL.`)
    process.exit(2)
  }
  const dir = resolve(cfg.REDIS_DATA_DIR)
  mkdirSync(dir, { recursive: true })
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec']
  const child = Bun.spawn([bin, ...args], { stdout: 'ignore', stderr: 'inherit' })
  process.on('exit', () => child.kill())
  const stop = async () => {
    child.kill('SIGTERM')
    const late = setTimeout(() => child.kill('SIGKILL'), 10_000)
    await child.exited
    clearTimeout(late)
  }
  for (let i = 0; i < 50; i++) {
    if (await reachable(host, port)) {
      console.error(`started redis-server on ${host}:${port} (pid ${child.pid}); append-only file in ${dir} (fsync every second)`)
      return { stop }
    }
    await Bun.sleep(100)
  }
  console.error(`redis-server did not come up on port ${port}`)
  process.exit(2)
}
