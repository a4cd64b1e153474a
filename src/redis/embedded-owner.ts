/**
 * Who a redis-server on our data dir (REDIS_DATA_DIR) belongs to, so that the next start can tell
 * an orphan from a Redis another running service started. The service that starts one writes
 * `owner.json` there; a Redis found later on the same port and dir is
 * - `orphan` when the service named there is gone (or nothing names it): the next start shuts it
 *   down and starts its own child, tied to its life;
 * - `owned` while that service still runs (a second process on the same data dir): it is used as is;
 * - `foreign` when it runs on other files (the operator's own Redis at that URL): used as is.
 */
import { existsSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Redis from 'ioredis'

export interface Owner {
  service_pid: number
  redis_pid: number
}

const FILE = 'owner.json'

export function writeOwner(dir: string, owner: Owner): void {
  writeFileSync(join(dir, FILE), JSON.stringify(owner))
}

/** Removes the record on a clean stop, unless another service has written its own since. */
export function clearOwner(dir: string, servicePid: number): void {
  if (readOwner(dir)?.service_pid === servicePid) rmSync(join(dir, FILE), { force: true })
}

function readOwner(dir: string): Owner | null {
  try {
    const o = JSON.parse(readFileSync(join(dir, FILE), 'utf8')) as Partial<Owner>
    return Number.isInteger(o.service_pid) && Number.isInteger(o.redis_pid) ? (o as Owner) : null
  } catch {
    return null
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    // EPERM: the process exists, under another user.
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function samePath(a: string, b: string): boolean {
  try {
    return existsSync(a) && existsSync(b) && realpathSync(a) === realpathSync(b)
  } catch {
    return false
  }
}

export type Found = { kind: 'foreign' } | { kind: 'owned'; pid: number; owner_pid: number } | { kind: 'orphan'; pid: number; client: Redis }

/**
 * Asks the Redis at `url` for its dir and pid. A Redis that will not say (CONFIG renamed, a
 * password we lack) is not one we started: ours run with neither.
 */
export async function identify(url: string, dataDir: string): Promise<Found> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 2000 }).on('error', () => {})
  try {
    await client.connect()
    const [, dir] = (await client.call('config', 'get', 'dir')) as [string, string]
    const pid = Number(/process_id:(\d+)/.exec(await client.info('server'))?.[1])
    if (!dir || !samePath(dir, dataDir) || !pid) {
      client.disconnect()
      return { kind: 'foreign' }
    }
    const owner = readOwner(dataDir)
    if (owner && owner.redis_pid === pid && owner.service_pid !== process.pid && alive(owner.service_pid)) {
      client.disconnect()
      return { kind: 'owned', pid, owner_pid: owner.service_pid }
    }
    return { kind: 'orphan', pid, client }
  } catch {
    client.disconnect()
    return { kind: 'foreign' }
  }
}

/** SHUTDOWN writes the append-only file out, then the server exits (the connection drops). */
export async function shutDown(client: Redis): Promise<void> {
  await client.call('shutdown').catch(() => {})
  client.disconnect()
}
