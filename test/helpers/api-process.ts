/**
 * The service as production runs it — `bun run src/index.ts` in its own process — for the fault
 * tests that must kill it. The test owns the fake upstream (in its own process), the database
 * and the Redis; the child only gets env. `ledgerStores()` builds, in the test process, the same
 * view of Redis and Postgres the child uses, for the invariant checks.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { parseConfig } from '../../src/config'
import { buildServices, type Services } from '../../src/services'
import { freePorts, removeDir, tempDir, track } from './redis-server'
import { testCatalog } from './harness'

const ROOT = join(import.meta.dir, '..', '..')

export interface ApiProcess {
  url: string
  env: Record<string, string>
  start(): Promise<void>
  /** SIGKILL: no drain, no shutdown hook. */
  kill(): Promise<void>
  /** SIGTERM: the graceful path (drains the flusher). */
  stop(): Promise<void>
  log(): Promise<string>
  /** Kills the process and removes its catalog and logs. */
  dispose(): Promise<void>
  /** The running process's pid (undefined when stopped), for tests that signal it themselves. */
  readonly pid: number | undefined
}

export interface ApiProcessOptions {
  redisUrl?: string
  redisClusterNodes?: string
  databaseUrl: string
  prefix: string
  fakeUrl: string
  env?: Record<string, string>
  /** The catalog (default: the HTTP tests' testCatalog). */
  catalog?: (fakeUrl: string) => unknown
}

export async function apiProcess(o: ApiProcessOptions): Promise<ApiProcess> {
  const [port] = await freePorts(1)
  const dir = tempDir('api')
  const catalogFile = join(dir, 'catalog.json')
  writeFileSync(catalogFile, JSON.stringify((o.catalog ?? testCatalog)(o.fakeUrl)))
  const env: Record<string, string> = {
    PORT: String(port),
    DATABASE_URL: o.databaseUrl,
    REDIS_URL: o.redisUrl ?? 'redis://127.0.0.1:6379',
    ...(o.redisClusterNodes ? { REDIS_CLUSTER_NODES: o.redisClusterNodes } : {}),
    REDIS_KEY_PREFIX: o.prefix,
    CATALOG_FILE: catalogFile,
    LOG: 'json',
    FAKE_HOUSE_KEY: 'house-secret-key',
    BASE_URL: 'http://pab.test',
    PAYMENTS_SANDBOX_PUBLIC: '1',
    RATE_LIMIT_PER_IP: '100000000',
    RATE_LIMIT_PER_TOKEN: '100000000',
    SIGNUP_ALARM_PER_HOUR: '100000',
    ...o.env,
  }
  const logs: string[] = []
  let proc: Subprocess | null = null
  let untrack = () => {}
  const url = `http://127.0.0.1:${port}`
  const api: ApiProcess = {
    url,
    env,
    async start() {
      // One log file per start: a restart must not truncate what the killed process wrote.
      const logFile = join(dir, `api-${logs.length}.log`)
      logs.push(logFile)
      proc = Bun.spawn([process.execPath, 'run', 'src/index.ts'], { cwd: ROOT, env: { ...process.env, ...env }, stdout: Bun.file(logFile), stderr: Bun.file(logFile) })
      untrack = track(proc)
      const until = Date.now() + 30_000
      while (Date.now() < until) {
        if (proc.exitCode !== null) throw new Error(`the API exited with ${proc.exitCode}: ${await api.log()}`)
        try {
          if ((await fetch(`${url}/status`, { signal: AbortSignal.timeout(1000) })).status === 200) return
        } catch {}
        await Bun.sleep(50)
      }
      throw new Error('the API did not answer /status within 30 s')
    },
    async kill() {
      if (!proc) return
      proc.kill('SIGKILL')
      await proc.exited
      untrack()
      proc = null
    },
    async stop() {
      if (!proc) return
      proc.kill('SIGTERM')
      const t = setTimeout(() => proc?.kill('SIGKILL'), 10_000)
      await proc.exited
      clearTimeout(t)
      untrack()
      proc = null
    },
    get pid() {
      return proc?.pid
    },
    log: async () => (await Promise.all(logs.map((f) => Bun.file(f).text().catch(() => '')))).join('\n'),
    async dispose() {
      await api.kill()
      removeDir(dir)
    },
  }
  return api
}

/** Services over the child's Redis prefix and database, for reading and flushing in the test. */
export async function ledgerStores(env: Record<string, string>): Promise<Services> {
  const cfg = parseConfig({ ...env, LOG: 'silent', PORT: '0' })
  return buildServices(cfg, { env })
}

export interface LoadTally {
  /** Call ids answered 200 with a complete body. */
  ok: string[]
  /** Call ids answered with `refunded: true`. */
  refunded: string[]
  /** Call ids of proxied answers whose body broke off after the status line (the provider reset). */
  cut: string[]
  /** Answers that were neither (status → count). */
  other: Map<number, number>
  /** Requests that got no HTTP answer (connection refused or reset), with the time they failed. */
  errors: number[]
  /** Times of answers with a 5xx other than a refunded provider error. */
  failedAt: number[]
}

/**
 * Closed-loop load: `workers` loops, each POSTing one request after another to `path(i)` with a
 * token of `tokens` (in turn), until `stop()`. Every answer is tallied by call id (the JSON body's
 * `call_id`, or the proxy's `x-pab-call-id` header), so the test can later find each acknowledged
 * debit and each refund in the ledger.
 */
export function driveLoad(url: string, tokens: string[], o: { workers: number; path: (i: number) => string; timeoutMs?: number }) {
  const tally: LoadTally = { ok: [], refunded: [], cut: [], other: new Map(), errors: [], failedAt: [] }
  let running = true
  let n = 0
  const worker = async () => {
    while (running) {
      const i = n++
      let res: Response
      try {
        res = await fetch(url + o.path(i), {
          method: 'POST',
          headers: { authorization: `Bearer ${tokens[i % tokens.length]}`, 'content-type': 'application/json' },
          body: '{"q":"load"}',
          signal: AbortSignal.timeout(o.timeoutMs ?? 10_000),
        })
      } catch {
        tally.errors.push(Date.now())
        await Bun.sleep(10)
        continue
      }
      const header = res.headers.get('x-pab-call-id')
      let text: string
      try {
        text = await res.text()
      } catch {
        if (header) tally.cut.push(header)
        else tally.errors.push(Date.now())
        continue
      }
      let body: { call_id?: string; refunded?: boolean } = {}
      try {
        body = JSON.parse(text)
      } catch {}
      const callId = body.call_id ?? header
      if (res.status === 200 && callId) tally.ok.push(callId)
      else if (body.refunded && callId) tally.refunded.push(callId)
      else {
        tally.other.set(res.status, (tally.other.get(res.status) ?? 0) + 1)
        if (res.status >= 500) tally.failedAt.push(Date.now())
      }
    }
  }
  const loops = Array.from({ length: o.workers }, worker)
  return {
    tally,
    get sent() {
      return n
    },
    async stop() {
      running = false
      await Promise.all(loops)
      return tally
    },
  }
}

/** `/v1/call/<slug>` of the slug `pick(i)`. */
export const callPath = (pick: (i: number) => string) => (i: number) => `/v1/call/${pick(i)}`

export async function signupOver(url: string, n: number, tag: string): Promise<{ token: string; account_id: string }[]> {
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const res = await fetch(`${url}/v1/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: `f${i}-${tag}@example.com` }) })
      if (res.status !== 201) throw new Error(`signup: ${res.status} ${await res.text()}`)
      return (await res.json()) as { token: string; account_id: string }
    }),
  )
}

export async function waitDrained(url: string, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs
  while (Date.now() < until) {
    const st = (await (await fetch(`${url}/status`)).json()) as { ledger_lag: { entries: number } }
    if (st.ledger_lag.entries === 0) return
    await Bun.sleep(100)
  }
  throw new Error('the outbox did not drain: ' + JSON.stringify(await (await fetch(`${url}/status`)).json()))
}
