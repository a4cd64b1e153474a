/**
 * The proxy bench's stand-in for an LLM provider (OpenAI's API shape): POST /v1/chat/completions
 * answers a small chat.completion, or with `"stream": true` a 20-chunk SSE stream (each frame a
 * separate write, no delays). It does no other work, so the bench measures the hops in front of it.
 *
 *   PORT=9101 bun bench/proxy-upstream.ts
 */
import { openaiCompletion, openaiFrames } from '../test/fakes/llm'

export const SSE_CHUNKS = 20
const enc = new TextEncoder()

export function startLlmUpstream(port: number) {
  const json = JSON.stringify(openaiCompletion('bench-model', 'Hello from the bench upstream.'))
  const frames = openaiFrames('bench-model', SSE_CHUNKS).map((f) => enc.encode(f))
  return Bun.serve({
    port,
    hostname: '127.0.0.1',
    async fetch(req) {
      const body = req.method === 'POST' ? ((await req.json().catch(() => ({}))) as { stream?: boolean }) : {}
      if (!body.stream) return new Response(json, { headers: { 'content-type': 'application/json' } })
      let i = 0
      return new Response(
        new ReadableStream({
          pull(c) {
            if (i === frames.length) return c.close()
            c.enqueue(frames[i++]!)
          },
        }),
        { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } },
      )
    },
  })
}

if (import.meta.main) {
  const server = startLlmUpstream(Number(process.env.PORT ?? 0))
  console.log(`llm upstream listening on ${server.port}`)
}
