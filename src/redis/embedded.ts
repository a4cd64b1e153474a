/**
 * The zero-setup path of the quick start: when no Redis answers at REDIS_URL and that URL points
 * at this machine, start a `redis-server` child on its port; otherwise exit with a clear message.
 */
import { connect } from 'node:net'
import type { Config } from '../config'

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

export async function ensureRedis(cfg: Config): Promise<void> {
  if (cfg.REDIS_CLUSTER_NODES) return
  const url = new URL(cfg.REDIS_URL)
  const host = url.hostname || '127.0.0.1'
  const port = Number(url.port || 6379)
  if (await reachable(host, port)) return
  if (!['127.0.0.1', 'localhost', '::1'].includes(host)) {
    console.error(`Redis is not reachable at ${cfg.REDIS_URL}. Start it, or point REDIS_URL at a running Redis.`)
    process.exit(2)
  }
  const bin = Bun.which('redis-server')
  if (!bin) {
    console.error(`No Redis at ${cfg.REDIS_URL} and no redis-server on the PATH. Install Redis (e.g. apt-get install redis-server) or set REDIS_URL.`)
    process.exit(2)
  }
  const child = Bun.spawn([bin, '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdout: 'ignore', stderr: 'inherit' })
  process.on('exit', () => child.kill())
  for (let i = 0; i < 50; i++) {
    if (await reachable(host, port)) {
      console.error(`started redis-server on ${host}:${port} (pid ${child.pid}); it keeps nothing on disk`)
      return
    }
    await Bun.sleep(100)
  }
  console.error(`redis-server did not come up on port ${port}`)
  process.exit(2)
}
