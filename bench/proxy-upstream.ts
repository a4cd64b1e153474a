/**
 * The proxy bench's stand-in for an LLM provider (OpenAI's API shape): POST /v1/chat/completions
 * answers a small chat.completion (with its `usage`), or with `"stream": true` a 20-chunk SSE stream
 * (each frame a separate write, no delays), each chunk ending in OpenAI's `obfuscation` padding (sent
 * by default since 2025). When the request asks for `stream_options.include_usage` — which a metered
 * route adds, so the metered rows read a provider's usage, not an estimate — it answers as OpenAI's
 * API does: `"usage":null` on every chunk, and a usage chunk (empty `choices`) before `[DONE]`. It
 * does no other work, so the bench measures the hops in front of it.
 *
 *   PORT=9101 bun bench/proxy-upstream.ts
 */
import { openaiCompletion, openaiFrames } from '../test/fakes/llm'

export const SSE_CHUNKS = 20
const enc = new TextEncoder()

/** OpenAI's usage object as its API returns it today (the details included). */
const usageOf = (completion: number) => ({
  prompt_tokens: 12,
  completion_tokens: completion,
  total_tokens: 12 + completion,
  prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
})

/** OpenAI's padding, of a length that varies from chunk to chunk (it evens out chunk sizes). */
const PADS = ['ZGF', 'lRK2aBv', 'kJ', '0wmdEAC', 'Qx9', 'a1B2c3D4e']
const padded = (frames: string[], before = '') => frames.map((f, i) => f.replace('}\n\n', `${before},"obfuscation":"${PADS[i % PADS.length]}"}\n\n`))

/**
 * The frames with the usage option on: `"usage":null` on every chunk, before the padding (OpenAI's
 * API reference: "All other chunks will also include a usage field, but with a null value"), and
 * the last frame split so that a usage chunk goes between the finish chunk and `[DONE]`.
 */
function framesWithUsage(model: string): string[] {
  const frames = padded(openaiFrames(model, SSE_CHUNKS), ',"usage":null')
  const last = frames.pop()!
  const [finish] = last.split('data: [DONE]')
  const usage = {
    id: 'chatcmpl-fake',
    object: 'chat.completion.chunk',
    created: 1700000000,
    model,
    choices: [],
    usage: usageOf(SSE_CHUNKS * 2),
  }
  return [...frames, finish!, `data: ${JSON.stringify(usage)}\n\ndata: [DONE]\n\n`]
}

export function startLlmUpstream(port: number) {
  const json = JSON.stringify({ ...openaiCompletion('bench-model', 'Hello from the bench upstream.'), usage: usageOf(7) })
  const plain = padded(openaiFrames('bench-model', SSE_CHUNKS)).map((f) => enc.encode(f))
  const withUsage = framesWithUsage('bench-model').map((f) => enc.encode(f))
  return Bun.serve({
    port,
    hostname: '127.0.0.1',
    async fetch(req) {
      const body = req.method === 'POST' ? ((await req.json().catch(() => ({}))) as { stream?: boolean; stream_options?: { include_usage?: boolean } }) : {}
      if (!body.stream) return new Response(json, { headers: { 'content-type': 'application/json' } })
      const frames = body.stream_options?.include_usage === true ? withUsage : plain
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
