/**
 * The baseline of both benches: a bare Bun server that forwards each request to the upstream with
 * `fetch` and returns its answer. No auth, no ledger, no validation, no header policy: whatever our
 * service costs beyond this row is the price of the ledger and the governance around it.
 *
 * Two modes, one per bench: `buffered` (the paid-call bench: read the body, answer a whole body,
 * like /v1/call) and `streaming` (the proxy bench: both bodies piped, nothing buffered, like /proxy).
 *
 *   PORT=9002 UPSTREAM_URL=http://127.0.0.1:9001 [STREAMING=1] bun bench/passthrough.ts
 */
export function startPassthrough(port: number, upstream: string, mode: 'buffered' | 'streaming' = 'buffered') {
  const base = upstream.replace(/\/$/, '')
  const streaming = mode === 'streaming'
  return Bun.serve({
    port,
    hostname: '127.0.0.1',
    async fetch(req) {
      const url = new URL(req.url)
      const hasBody = req.method !== 'GET' && req.method !== 'HEAD'
      const res = await fetch(base + url.pathname + url.search, {
        method: req.method,
        headers: { 'content-type': req.headers.get('content-type') ?? 'application/json' },
        body: !hasBody ? undefined : streaming ? req.body : await req.text(),
        ...(streaming ? { duplex: 'half' } : {}),
      } as RequestInit)
      const headers = { 'content-type': res.headers.get('content-type') ?? 'application/json' }
      return new Response(streaming ? res.body : await res.text(), { status: res.status, headers })
    },
  })
}

if (import.meta.main) {
  const upstream = process.env.UPSTREAM_URL
  if (!upstream) {
    console.error('UPSTREAM_URL is required (the fake upstream, e.g. http://127.0.0.1:9001)')
    process.exit(2)
  }
  const mode = process.env.STREAMING === '1' ? 'streaming' : 'buffered'
  const server = startPassthrough(Number(process.env.PORT ?? 0), upstream, mode)
  console.log(`${mode} passthrough listening on ${server.port} → ${upstream}`)
}
