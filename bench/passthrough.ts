/**
 * The baseline of both benches: a bare Bun server that forwards each request to the upstream with
 * `fetch` and returns its answer. No auth, no ledger, no validation, no header policy: whatever our
 * service costs beyond this row is the price of the ledger and the governance around it.
 *
 * Two modes, one per bench: `buffered` (the paid-call bench: read the body, answer a whole body,
 * like /v1/call) and `streaming` (the proxy bench: both bodies piped, nothing buffered, like /proxy).
 *
 *   PORT=9002 UPSTREAM_URL=http://127.0.0.1:9001 [STREAMING=1] [LEDGER_FLOOR_REDIS_URL=redis://…] bun bench/passthrough.ts
 */
export function startPassthrough(port: number, upstream: string, mode: 'buffered' | 'streaming' = 'buffered', floor?: LedgerFloor) {
  const base = upstream.replace(/\/$/, '')
  const streaming = mode === 'streaming'
  return Bun.serve({
    port,
    hostname: '127.0.0.1',
    async fetch(req) {
      if (floor) await floor.before()
      const url = new URL(req.url)
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD'
      const res = await fetch(base + url.pathname + url.search, {
        method: req.method,
        headers: { 'content-type': req.headers.get('content-type') ?? 'application/json' },
        body: !hasBody ? undefined : streaming ? req.body : await req.text(),
        ...(streaming ? { duplex: 'half' } : {}),
      } as RequestInit)
      const headers = { 'content-type': res.headers.get('content-type') ?? 'application/json' }
      floor?.after()
      return new Response(streaming ? res.body : await res.text(), { status: res.status, headers })
    },
  })
}

/**
 * The floor of any design where Redis is the ledger (the "ledger floor" row): the passthrough plus
 * the two round trips every paid request needs at the least, a script before the upstream (the
 * debit, awaited) and one after it (filing the outcome, not awaited, as the service files it),
 * both no-op scripts on one key through the service's ioredis settings (auto-pipelined EVALSHA).
 * No checks, no writes, no Postgres: whatever a real ledger does costs more than this.
 */
export interface LedgerFloor {
  before(): Promise<unknown>
  after(): void
}

export async function ledgerFloor(redisUrl: string): Promise<LedgerFloor> {
  const Redis = (await import('ioredis')).default
  const redis = new Redis(redisUrl, { enableAutoPipelining: true })
  redis.defineCommand('floorNoop', { numberOfKeys: 1, lua: 'return 0' })
  const run = redis as unknown as { floorNoop(key: string): Promise<unknown> }
  const key = '{s:00}:bench:floor'
  await run.floorNoop(key)
  return {
    before: () => run.floorNoop(key),
    after: () => void run.floorNoop(key).catch(() => {}),
  }
}

if (import.meta.main) {
  const upstream = process.env.UPSTREAM_URL
  if (!upstream) {
    console.error('UPSTREAM_URL is required (the fake upstream, e.g. http://127.0.0.1:9001)')
    process.exit(2)
  }
  const mode = process.env.STREAMING === '1' ? 'streaming' : 'buffered'
  const floor = process.env.LEDGER_FLOOR_REDIS_URL ? await ledgerFloor(process.env.LEDGER_FLOOR_REDIS_URL) : undefined
  const server = startPassthrough(Number(process.env.PORT ?? 0), upstream, mode, floor)
  console.log(`${mode} passthrough${floor ? ' with the ledger floor' : ''} listening on ${server.port} → ${upstream}`)
}
