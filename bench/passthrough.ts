/**
 * The baseline of the paid call: a bare Bun server that forwards each request to the upstream with
 * `fetch` and returns its answer. No auth, no ledger, no validation: whatever the paid call costs
 * beyond this row is the price of the ledger and the service around it.
 *
 *   PORT=9002 UPSTREAM_URL=http://127.0.0.1:9001 bun bench/passthrough.ts
 */
export function startPassthrough(port: number, upstream: string) {
  const base = upstream.replace(/\/$/, '')
  return Bun.serve({
    port,
    hostname: '127.0.0.1',
    async fetch(req) {
      const url = new URL(req.url)
      const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : await req.text()
      const res = await fetch(base + url.pathname + url.search, {
        method: req.method,
        headers: { 'content-type': req.headers.get('content-type') ?? 'application/json' },
        body,
      })
      return new Response(await res.text(), { status: res.status, headers: { 'content-type': res.headers.get('content-type') ?? 'application/json' } })
    },
  })
}

if (import.meta.main) {
  const upstream = process.env.UPSTREAM_URL
  if (!upstream) {
    console.error('UPSTREAM_URL is required (the fake upstream, e.g. http://127.0.0.1:9001)')
    process.exit(2)
  }
  const server = startPassthrough(Number(process.env.PORT ?? 0), upstream)
  console.log(`passthrough listening on ${server.port} → ${upstream}`)
}
