/**
 * The bench's stand-in for a search API: answers every request with one small, fixed JSON body.
 * It reads the request body (a real API does) but does no other work, so that the rows of the
 * bench measure the hop in front of it, not the upstream.
 *
 *   PORT=9001 [UPSTREAM_DELAY_MS=20] bun bench/fake-upstream.ts
 *
 * UPSTREAM_DELAY_MS makes every answer wait that long, like a real API on the network: the rows
 * then show what the ledger adds to a realistic call, next to the zero-latency rows that show its
 * CPU cost.
 */
const BODY = JSON.stringify({
  searchParameters: { q: 'bench query', type: 'search' },
  organic: [
    { title: 'Prepaid balances for agents', link: 'https://example.com/a', position: 1 },
    { title: 'Capped, auditable API spend', link: 'https://example.com/b', position: 2 },
  ],
})

export function startFakeUpstream(port: number, delayMs = 0) {
  return Bun.serve({
    port,
    hostname: '127.0.0.1',
    async fetch(req) {
      if (req.method === 'POST') await req.arrayBuffer()
      if (delayMs > 0) await Bun.sleep(delayMs)
      return new Response(BODY, { headers: { 'content-type': 'application/json' } })
    },
  })
}

if (import.meta.main) {
  const server = startFakeUpstream(Number(process.env.PORT ?? 0), Number(process.env.UPSTREAM_DELAY_MS ?? 0))
  console.log(`fake-upstream listening on ${server.port}`)
}
