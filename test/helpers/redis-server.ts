/**
 * Private `redis-server` processes for the tests that kill, restart or cluster Redis. They listen on
 * spare loopback ports with their files in a temp dir, so the machine's shared Redis (6379) is never
 * touched, and every process is killed and every dir removed on stop. Safety nets when a run dies
 * early: `bun test` kills the dangling child processes of each file, and a `bun run` script (the
 * bench) kills and removes what is left at exit.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import Redis from 'ioredis'

const live = new Set<Subprocess>()

/** Registers a child to be killed at exit (the cluster's nodes use it too). */
export function track(p: Subprocess): () => void {
  live.add(p)
  return () => live.delete(p)
}
const dirs = new Set<string>()
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL')
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer()
    s.once('error', () => resolve(false))
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)))
  })
}

/**
 * `count` consecutive free ports whose cluster-bus ports (+10000) are free too. Random bases keep
 * two runs on one machine (CI next to a developer's run) from fighting over fixed ports.
 */
export async function freePorts(count: number): Promise<number[]> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20000 + Math.floor(Math.random() * 9000)
    const ports = Array.from({ length: count }, (_, i) => base + i)
    const checks = await Promise.all(ports.flatMap((p) => [portFree(p), portFree(p + 10000)]))
    if (checks.every(Boolean)) return ports
  }
  throw new Error('no free port range for redis-server')
}

export function tempDir(tag: string): string {
  const d = mkdtempSync(join(tmpdir(), `pab-${tag}-`))
  dirs.add(d)
  return d
}

export function removeDir(d: string): void {
  rmSync(d, { recursive: true, force: true })
  dirs.delete(d)
}

export async function waitPing(port: number, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs
  while (Date.now() < until) {
    const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null }).on('error', () => {})
    try {
      await r.connect()
      // A server still loading its AOF answers LOADING; it is not ready yet.
      if ((await r.ping()) === 'PONG') return
    } catch {
    } finally {
      r.disconnect()
    }
    await Bun.sleep(50)
  }
  throw new Error(`redis-server on ${port} did not answer within ${timeoutMs} ms`)
}

export interface RedisServer {
  port: number
  url: string
  dir: string
  /** SIGKILL: what a crash or an OOM kill does (nothing is flushed beyond what the fsync policy wrote). */
  kill(): Promise<void>
  /** Starts the server again on the same port and dir (an AOF, if any, is replayed). */
  start(): Promise<void>
  stop(): Promise<void>
}

export interface RedisServerOptions {
  /** `appendonly yes` with this fsync policy; absent: no persistence at all. */
  appendfsync?: 'always' | 'everysec' | 'no'
  extra?: string[]
}

export async function startRedisServer(opt: RedisServerOptions = {}): Promise<RedisServer> {
  const [port] = await freePorts(1)
  const dir = tempDir('redis')
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--daemonize', 'no', '--logfile', join(dir, 'redis.log')]
  if (opt.appendfsync) args.push('--appendonly', 'yes', '--appendfsync', opt.appendfsync)
  else args.push('--appendonly', 'no')
  args.push(...(opt.extra ?? []))
  let proc: Subprocess | null = null

  const server: RedisServer = {
    port: port!,
    url: `redis://127.0.0.1:${port}`,
    dir,
    async start() {
      proc = Bun.spawn(['redis-server', ...args], { stdout: 'ignore', stderr: 'ignore' })
      live.add(proc)
      await waitPing(port!)
    },
    async kill() {
      if (!proc) return
      proc.kill('SIGKILL')
      await proc.exited
      live.delete(proc)
      proc = null
    },
    async stop() {
      await server.kill()
      removeDir(dir)
    },
  }
  await server.start()
  return server
}
