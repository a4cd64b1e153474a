/**
 * A real Redis Cluster for the tests: `count` masters from `redis-server` on spare loopback ports
 * (cluster-enabled, no persistence, config files in a temp dir), joined by
 * `redis-cli --cluster create --cluster-replicas 0`. `stop()` kills every node and removes the
 * dir; a failed start cleans up before it throws.
 */
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import Redis from 'ioredis'
import { freePorts, removeDir, tempDir, track, waitPing } from '../helpers/redis-server'

export interface RedisCluster {
  ports: number[]
  /** The REDIS_CLUSTER_NODES value. */
  nodes: string
  /** One plain client per master (for checks that must read one node, not the cluster). */
  masterClients(): Redis[]
  stop(): Promise<void>
}

export async function startRedisCluster(count = 3): Promise<RedisCluster> {
  const ports = await freePorts(count)
  const dir = tempDir('cluster')
  const procs: Subprocess[] = []
  const clients: Redis[] = []
  const tracked: (() => void)[] = []
  const stop = async () => {
    for (const c of clients) c.disconnect()
    for (const p of procs) p.kill('SIGKILL')
    await Promise.all(procs.map((p) => p.exited))
    for (const untrack of tracked) untrack()
    removeDir(dir)
  }
  try {
    for (const port of ports) {
      procs.push(
        Bun.spawn(
          [
            'redis-server',
            '--port', String(port),
            '--bind', '127.0.0.1',
            '--cluster-enabled', 'yes',
            '--cluster-config-file', join(dir, `nodes-${port}.conf`),
            '--cluster-node-timeout', '5000',
            '--dir', dir,
            '--save', '',
            '--appendonly', 'no',
            '--daemonize', 'no',
            '--logfile', join(dir, `redis-${port}.log`),
          ],
          { stdout: 'ignore', stderr: 'ignore' },
        ),
      )
      tracked.push(track(procs.at(-1)!))
    }
    await Promise.all(ports.map((p) => waitPing(p)))
    const create = Bun.spawn(
      ['redis-cli', '--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'],
      { stdout: 'pipe', stderr: 'pipe' },
    )
    const [out, code] = await Promise.all([new Response(create.stdout).text(), create.exited])
    if (code !== 0) throw new Error(`redis-cli --cluster create exited with ${code}: ${out.slice(-1000)}`)
    for (const port of ports) clients.push(new Redis({ port, host: '127.0.0.1' }).on('error', () => {}))
    await waitClusterOk(clients)
  } catch (e) {
    await stop()
    throw e
  }
  return {
    ports,
    nodes: ports.map((p) => `127.0.0.1:${p}`).join(','),
    masterClients: () => clients,
    stop,
  }
}

/** Every node must report cluster_state:ok and agree that all 16384 slots are assigned. */
async function waitClusterOk(clients: Redis[], timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs
  while (Date.now() < until) {
    const infos = await Promise.all(clients.map((c) => c.cluster('INFO') as Promise<string>))
    if (infos.every((i) => i.includes('cluster_state:ok') && i.includes('cluster_slots_assigned:16384'))) return
    await Bun.sleep(100)
  }
  throw new Error('the cluster did not reach cluster_state:ok')
}
