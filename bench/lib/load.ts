/**
 * One load run with autocannon, as a child process (Node when present: autocannon is a Node tool,
 * and a separate client process keeps its CPU out of the servers' event loops).
 */
import { join } from 'node:path'

export interface LoadOptions {
  url: string
  connections: number
  durationS: number
  body: string
  headers: Record<string, string>
  /** Each `[<id>]` in the body becomes a fresh random id per request (JSON-RPC ids of the MCP row). */
  idReplacement?: boolean
}

export interface LoadResult {
  reqPerSec: number
  p50: number
  p99: number
  /** 99.9th percentile, ms (the scale bench reports it). */
  p999: number
  ok: number
  non2xx: number
  errors: number
  timeouts: number
  durationS: number
  /** CPU the client itself used, in % of one core. */
  clientCpuPct: number
}

const AUTOCANNON = join(import.meta.dir, '..', '..', 'node_modules', 'autocannon', 'autocannon.js')

export function clientRuntime(): string[] {
  const node = Bun.which('node')
  return node ? [node] : [process.execPath]
}

export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  const args = [...clientRuntime(), AUTOCANNON, '--json', '-c', String(o.connections), '-d', String(o.durationS), '-m', 'POST', '-b', o.body]
  if (o.idReplacement) args.push('-I')
  for (const [k, v] of Object.entries(o.headers)) args.push('-H', `${k}=${v}`)
  args.push(o.url)
  const started = performance.now()
  const proc = Bun.spawn(args, { stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) throw new Error(`autocannon exited with ${code}: ${err.slice(-2000)}`)
  const r = JSON.parse(out.slice(out.indexOf('{')))
  const wallS = (performance.now() - started) / 1000
  const cpuUs = Number(proc.resourceUsage()?.cpuTime.total ?? 0n)
  return {
    reqPerSec: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    p999: r.latency.p99_9,
    ok: r['2xx'],
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    durationS: r.duration,
    clientCpuPct: Math.round((cpuUs / 1e6 / wallS) * 100),
  }
}

export interface RateResult {
  /** The rate asked for, and the 2xx rate the server kept. */
  rate: number
  reqPerSec: number
  /** Latency of the 2xx answers from their due time, ms with µs resolution. */
  p50: number
  p99: number
  p999: number
  max: number
  samples: number
  ok: number
  non2xx: number
  errors: number
  timeouts: number
  clientCpuPct: number
}

const PACED_LOOP = join(import.meta.dir, 'paced-loop.mjs')

/**
 * A rate-fixed (open-loop) run: bench/lib/paced-loop.mjs sends request i at start + i / rate
 * whatever the server's speed, and counts each latency from that due time, so the latency is that
 * of a server at that load, not of one driven to saturation. (autocannon's `overallRate` was used
 * before: it is a per-connection quota per second sent back to back, a saturating burst at the top
 * of every second — the upstream called directly measured p50 0.60 / p99 6.7 ms with it, 0.12 /
 * 1.6 ms paced.)
 */
export async function runRate(o: LoadOptions & { rate: number }): Promise<RateResult> {
  if (o.idReplacement) throw new Error('the paced client sends one body; a row needing [<id>] replacement cannot run at a fixed rate')
  const proc = Bun.spawn([...clientRuntime(), PACED_LOOP, JSON.stringify(o)], { stdout: 'pipe', stderr: 'pipe' })
  const started = performance.now()
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) throw new Error(`the open-loop client exited with ${code}: ${err.slice(-2000)}`)
  const wallS = (performance.now() - started) / 1000
  const cpuUs = Number(proc.resourceUsage()?.cpuTime.total ?? 0n)
  return { ...(JSON.parse(out) as Omit<RateResult, 'clientCpuPct'>), clientCpuPct: Math.round((cpuUs / 1e6 / wallS) * 100) }
}
