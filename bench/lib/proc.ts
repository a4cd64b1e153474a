/** Child processes of the bench and the machine's CPU accounting (Linux /proc). */
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Subprocess } from 'bun'

/** A port the OS just handed out; the child binds it a moment later (a tiny race, fine on loopback). */
export function freePort(): number {
  const s = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = s.port!
  s.stop(true)
  return port
}

export interface Child {
  name: string
  proc: Subprocess
  stop(): Promise<void>
}

/**
 * The allocator settings the image runs Bun with (the Dockerfile's `ENV MIMALLOC_*`): every process a
 * bench starts runs with them, the ledger floor and a baseline as ours; the bench's own environment wins.
 */
export const IMAGE_ALLOCATOR_ENV: Record<string, string> = Object.fromEntries(
  [...readFileSync(join(import.meta.dir, '..', '..', 'Dockerfile'), 'utf8').matchAll(/^ENV\s+(MIMALLOC_\w+)=(\S+)\s*$/gm)].map((m) => [m[1]!, m[2]!]),
)

/** `cwd`: the tree the child runs in (a baseline checkout runs its own src/ and lua/); default ours. */
export function startChild(name: string, cmd: string[], env: Record<string, string | undefined>, logFile: string, o: { cwd?: string } = {}): Child {
  const proc = Bun.spawn(cmd, { env: { ...IMAGE_ALLOCATOR_ENV, ...process.env, ...env } as Record<string, string>, stdout: Bun.file(logFile), stderr: Bun.file(logFile), cwd: o.cwd })
  return {
    name,
    proc,
    async stop() {
      if (proc.exitCode !== null) return
      proc.kill('SIGTERM')
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5000)
      await proc.exited
      clearTimeout(timer)
    },
  }
}

/** Polls a URL until it answers (any status) or the child dies. */
export async function waitHttp(url: string, child: Child, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs
  while (Date.now() < until) {
    if (child.proc.exitCode !== null) throw new Error(`${child.name} exited with ${child.proc.exitCode} before answering ${url}`)
    try {
      await fetch(url, { signal: AbortSignal.timeout(1000) })
      return
    } catch {
      await Bun.sleep(100)
    }
  }
  throw new Error(`${child.name} did not answer ${url} within ${timeoutMs} ms`)
}

const TICK = 100 // USER_HZ on Linux

/**
 * Whole-machine ticks: busy, total, kernel interrupt work (loopback networking runs largely in
 * softirq, charged to no process) and steal (time the hypervisor gave to other guests).
 */
function machineTicks(): { busy: number; total: number; irq: number; steal: number } {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
  const total = cpu.slice(0, 8).reduce((a, b) => a + b, 0)
  const idle = cpu[3]! + cpu[4]!
  return { busy: total - idle, total, irq: cpu[5]! + cpu[6]!, steal: cpu[7]! }
}

function pidTicks(pid: number): number {
  try {
    // comm may contain spaces: fields after the closing paren.
    const after = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return Number(after[11]) + Number(after[12])
  } catch {
    return 0
  }
}

/** Pids of every process whose command name is `comm` (shared servers: redis-server, postgres). */
export function pidsByComm(comm: string): number[] {
  const out: number[] = []
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      if (readFileSync(`/proc/${d}/comm`, 'utf8').trim() === comm) out.push(Number(d))
    } catch {}
  }
  return out
}

export type CpuGroups = Record<string, () => number[]>

/** CPU used while `fn` ran: the machine's busy share and each group's, in % of one core. */
export interface CpuSample<T> {
  value: T
  /** Busy share of all cores, %. */
  machineBusyPct: number
  /** Per group, % of one core. */
  groupPct: Record<string, number>
  /** The same, not rounded (a small group's µs per request). */
  groupPctExact: Record<string, number>
  /** Interrupt/softirq and steal time, % of one core. */
  irqPct: number
  stealPct: number
}

export async function measureCpu<T>(groups: CpuGroups, fn: () => Promise<T>): Promise<CpuSample<T>> {
  const pids = Object.fromEntries(Object.entries(groups).map(([k, f]) => [k, f()]))
  const sum = (ps: number[]) => ps.reduce((a, p) => a + pidTicks(p), 0)
  const m0 = machineTicks()
  const g0 = Object.fromEntries(Object.entries(pids).map(([k, ps]) => [k, sum(ps)]))
  const t0 = performance.now()
  const value = await fn()
  const seconds = (performance.now() - t0) / 1000
  const m1 = machineTicks()
  const groupPct: Record<string, number> = {}
  const groupPctExact: Record<string, number> = {}
  for (const [k, ps] of Object.entries(pids)) {
    // A process that started inside the window (a Postgres backend for a pool's new connection, as
    // a service's flusher opens on its first busy row) is counted whole: all its ticks are the window's.
    const born = groups[k]!().filter((p) => !ps.includes(p))
    // One that exits inside the window takes its ticks along: never below 0.
    groupPctExact[k] = Math.max(0, ((sum(ps) - g0[k]! + sum(born)) / TICK / seconds) * 100)
    groupPct[k] = Math.round(groupPctExact[k]!)
  }
  const machineBusyPct = Math.round(((m1.busy - m0.busy) / Math.max(1, m1.total - m0.total)) * 100)
  const pct = (ticks: number) => Math.round((ticks / TICK / seconds) * 100)
  return { value, machineBusyPct, groupPct, groupPctExact, irqPct: pct(m1.irq - m0.irq), stealPct: pct(m1.steal - m0.steal) }
}

/**
 * Backends of one database of the shared Postgres server (a backend's command line names its
 * database): a service's own Postgres CPU, apart from every other client's.
 */
export function postgresBackendsOf(database: string): number[] {
  const out: number[] = []
  for (const pid of pidsByComm('postgres')) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').includes(` ${database} `)) out.push(pid)
    } catch {}
  }
  return out
}

export function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
}
