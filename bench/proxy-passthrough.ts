/**
 * The proxy bench's baseline: a bare Bun server that streams each request to the upstream with
 * `fetch` and streams the answer back — both bodies piped, nothing buffered, no auth, no ledger, no
 * header policy. Whatever the proxy costs beyond this row is the price of the governance.
 *
 *   PORT=9102 UPSTREAM_URL=http://127.0.0.1:9101 bun bench/proxy-passthrough.ts
 */
export function startStreamingPassthrough(port: number, upstream: string) {
  const base = upstream.replace(/\/$/, '')
  return Bun.serve({
    port,
    hostname: '127.0.0.1',
    async fetch(req) {
      const url = new URL(req.url)
      const res = await fetch(base + url.pathname + url.search, {
        method: req.method,
        headers: { 'content-type': req.headers.get('content-type') ?? 'application/json' },
        body: req.body,
        duplex: 'half',
      } as RequestInit)
      return new Response(res.body, { status: res.status, headers: { 'content-type': res.headers.get('content-type') ?? 'application/json' } })
    },
  })
}

if (import.meta.main) {
  const upstream = process.env.UPSTREAM_URL
  if (!upstream) {
    console.error('UPSTREAM_URL is required (the fake upstream, e.g. http://127.0.0.1:9101)')
    process.exit(2)
  }
  const server = startStreamingPassthrough(Number(process.env.PORT ?? 0), upstream)
  console.log(`streaming passthrough listening on ${server.port} → ${upstream}`)
}
