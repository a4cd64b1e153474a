/**
 * OpenAI- and Anthropic-shaped answers for the loopback fake upstream (plug `llm.handler` into
 * `FakeUpstream.handler`), so the official SDKs can talk to the proxy:
 *   POST /v1/chat/completions   chat.completion, or with "stream": true chat.completion.chunk SSE + [DONE]
 *   POST /v1/messages           message, or with "stream": true Anthropic's event stream
 * A stream sends `chunks` deltas. When `gate` is set, the fake waits for it (at most `gateTimeoutMs`)
 * before the last delta, and logs 'fake:last-sent' to `events` as it sends it — a test resolves the
 * gate on the first chunk it receives, so the order of the two events shows whether the proxy
 * relayed the first chunk before the upstream finished.
 */
export interface LlmFake {
  handler(req: Request, seen: { body: string }): Response
  chunks: number
  gate: Promise<void> | null
  gateTimeoutMs: number
  events: string[]
}

const enc = new TextEncoder()

export function openaiCompletion(model: string, text: string) {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: 1700000000,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 },
  }
}

export function anthropicMessage(model: string, text: string) {
  return {
    id: 'msg_fake',
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 5, output_tokens: 5 },
  }
}

/** The SSE frames of a streamed completion: first, `n` deltas ("w0 ", "w1 ", …), last. */
export function openaiFrames(model: string, n: number): string[] {
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1700000000, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`
  return [
    chunk({ role: 'assistant', content: '' }, null),
    ...Array.from({ length: n }, (_, i) => chunk({ content: `w${i} ` }, null)),
    chunk({}, 'stop') + 'data: [DONE]\n\n',
  ]
}

export function anthropicFrames(model: string, n: number): string[] {
  const ev = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
  return [
    ev('message_start', { message: { ...anthropicMessage(model, ''), content: [], stop_reason: null, usage: { input_tokens: 5, output_tokens: 1 } } }) +
      ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    ...Array.from({ length: n }, (_, i) => ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: `w${i} ` } })),
    ev('content_block_stop', { index: 0 }) +
      ev('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: n } }) +
      ev('message_stop', {}),
  ]
}

export function createLlmFake(): LlmFake {
  const fake: LlmFake = {
    chunks: 5,
    gate: null,
    gateTimeoutMs: 5000,
    events: [],
    handler(req, seen) {
      const path = new URL(req.url).pathname
      const body = seen.body ? (JSON.parse(seen.body) as { model?: string; stream?: boolean }) : {}
      const model = body.model ?? 'fake-model'
      const text = Array.from({ length: fake.chunks }, (_, i) => `w${i} `).join('')
      if (path === '/v1/chat/completions')
        return body.stream ? sse(fake, openaiFrames(model, fake.chunks)) : Response.json(openaiCompletion(model, text))
      if (path === '/v1/messages')
        return body.stream ? sse(fake, anthropicFrames(model, fake.chunks)) : Response.json(anthropicMessage(model, text))
      return Response.json({ error: { message: `no fake route ${path}` } }, { status: 404 })
    },
  }
  return fake
}

function sse(fake: LlmFake, frames: string[]): Response {
  let i = 0
  return new Response(
    new ReadableStream({
      async pull(c) {
        if (i === frames.length) return c.close()
        if (i === frames.length - 1 && fake.gate) {
          await Promise.race([fake.gate, Bun.sleep(fake.gateTimeoutMs)])
          fake.events.push('fake:last-sent')
        }
        c.enqueue(enc.encode(frames[i++]!))
      },
    }),
    { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } },
  )
}
