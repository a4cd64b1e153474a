/**
 * OpenAI- and Anthropic-shaped answers for the loopback fake upstream (plug `llm.handler` into
 * `FakeUpstream.handler`), so the official SDKs can talk to the proxy:
 *   POST /v1/chat/completions   chat.completion, or with "stream": true chat.completion.chunk SSE + [DONE]
 *   POST /v1/messages           message, or with "stream": true Anthropic's event stream
 * A stream sends `chunks` deltas. When `gate` is set, the fake waits for it (at most `gateTimeoutMs`)
 * before the last delta, and logs 'fake:last-sent' to `events` as it sends it — a test resolves the
 * gate on the first chunk it receives, so the order of the two events shows whether the proxy
 * relayed the first chunk before the upstream finished.
 * Usage is real-shaped (metering, docs/api.md §7): `usage` sets the counts every answer reports
 * (cached = OpenAI's prompt_tokens_details.cached_tokens / Anthropic's cache_read_input_tokens);
 * an OpenAI chat stream reports it only when asked (`stream_options.include_usage`: every chunk then
 * carries `usage: null` and a last chunk with no choices carries the counts), like the real API,
 * whose chat chunks also end in an `obfuscation` padding string;
 * Anthropic streams put the input in message_start and the cumulative output in message_delta;
 * the Responses API in response.completed. Also POST /v1/responses and /v1/embeddings.
 * `noUsage` leaves the usage out; `dieAfter` = n breaks a stream's connection after n frames.
 */
export interface FakeUsage {
  input: number
  cached: number
  output: number
  /** Anthropic: input tokens written to the cache, 5-minute and 1-hour lifetimes. */
  cache_write?: number
  cache_write_1h?: number
}

export interface LlmFake {
  handler(req: Request, seen: { body: string }): Response
  chunks: number
  usage: FakeUsage
  noUsage: boolean
  dieAfter: number | null
  /** Milliseconds between stream frames (0: as fast as the reader pulls). */
  frameDelayMs: number
  gate: Promise<void> | null
  gateTimeoutMs: number
  events: string[]
  /** Every frame of a stream in one write, as a loaded proxy reads a fast provider's answer. */
  oneWrite: boolean
}

const enc = new TextEncoder()

const openaiUsageOf = (u: FakeUsage) => ({
  prompt_tokens: u.input + u.cached,
  completion_tokens: u.output,
  total_tokens: u.input + u.cached + u.output,
  prompt_tokens_details: { cached_tokens: u.cached, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
})
const anthropicUsageOf = (u: FakeUsage) => ({
  input_tokens: u.input,
  cache_creation_input_tokens: (u.cache_write ?? 0) + (u.cache_write_1h ?? 0),
  cache_read_input_tokens: u.cached,
  cache_creation: { ephemeral_5m_input_tokens: u.cache_write ?? 0, ephemeral_1h_input_tokens: u.cache_write_1h ?? 0 },
  output_tokens: u.output,
})
const responsesUsageOf = (u: FakeUsage) => ({
  input_tokens: u.input + u.cached,
  input_tokens_details: { cached_tokens: u.cached },
  output_tokens: u.output,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: u.input + u.cached + u.output,
})

export function openaiCompletion(model: string, text: string, usage?: FakeUsage | null) {
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: 1700000000,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    ...(usage === null ? {} : { usage: usage ? openaiUsageOf(usage) : { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 } }),
  }
}

export function anthropicMessage(model: string, text: string, usage?: FakeUsage | null) {
  return {
    id: 'msg_fake',
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    ...(usage === null ? {} : { usage: usage ? anthropicUsageOf(usage) : { input_tokens: 5, output_tokens: 5 } }),
  }
}

export function responsesAnswer(model: string, text: string, usage: FakeUsage | null) {
  return {
    id: 'resp_fake',
    object: 'response',
    created_at: 1700000000,
    status: 'completed',
    model,
    output: [{ type: 'message', id: 'msg_fake', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] }],
    ...(usage ? { usage: responsesUsageOf(usage) } : {}),
  }
}

export function responsesFrames(model: string, n: number, usage: FakeUsage | null): string[] {
  const ev = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
  const text = Array.from({ length: n }, (_, i) => `w${i} `).join('')
  const done = responsesAnswer(model, text, usage)
  return [
    ev('response.created', { response: { ...done, status: 'in_progress', output: [], usage: null } }),
    ...Array.from({ length: n }, (_, i) => ev('response.output_text.delta', { item_id: 'msg_fake', output_index: 0, content_index: 0, delta: `w${i} ` })),
    ev('response.completed', { response: done }),
  ]
}

/** OpenAI's `obfuscation` padding, every chat chunk's last member by default since 2025 (it evens out chunk sizes). */
const pad = (i: number) => 'x9Q'.repeat((i % 4) + 1)

/** OpenAI chat stream frames with the usage option: `usage: null` on each chunk, the counts on a last one. */
export function openaiUsageFrames(model: string, n: number, usage: FakeUsage | null): string[] {
  let i = 0
  const chunk = (choices: unknown[], u: unknown) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1700000000, model, choices, usage: u, obfuscation: pad(i++) })}\n\n`
  const c = (delta: Record<string, unknown>, finish: string | null) => [{ index: 0, delta, logprobs: null, finish_reason: finish }]
  return [
    chunk(c({ role: 'assistant', content: '' }, null), null),
    ...Array.from({ length: n }, (_, i) => chunk(c({ content: `w${i} ` }, null), null)),
    chunk(c({}, 'stop'), null),
    ...(usage ? [chunk([], openaiUsageOf(usage))] : []),
    'data: [DONE]\n\n',
  ]
}

/** The SSE frames of a streamed completion: first, `n` deltas ("w0 ", "w1 ", …), last. */
export function openaiFrames(model: string, n: number): string[] {
  let i = 0
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1700000000, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], obfuscation: pad(i++) })}\n\n`
  return [
    chunk({ role: 'assistant', content: '' }, null),
    ...Array.from({ length: n }, (_, i) => chunk({ content: `w${i} ` }, null)),
    chunk({}, 'stop') + 'data: [DONE]\n\n',
  ]
}

export function anthropicFrames(model: string, n: number, usage?: FakeUsage | null): string[] {
  const start = usage ? { ...anthropicUsageOf(usage), output_tokens: 1 } : { input_tokens: 5, output_tokens: 1 }
  const delta = usage ? { output_tokens: usage.output } : usage === null ? null : { output_tokens: n }
  const ev = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`
  return [
    ev('message_start', { message: { ...anthropicMessage(model, ''), content: [], stop_reason: null, usage: start } }) +
      ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    ...Array.from({ length: n }, (_, i) => ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: `w${i} ` } })),
    ev('content_block_stop', { index: 0 }) +
      ev('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, ...(delta ? { usage: delta } : {}) }) +
      ev('message_stop', {}),
  ]
}

export function createLlmFake(): LlmFake {
  const fake: LlmFake = {
    chunks: 5,
    usage: { input: 5, cached: 0, output: 5 },
    noUsage: false,
    dieAfter: null,
    frameDelayMs: 0,
    gate: null,
    gateTimeoutMs: 5000,
    events: [],
    oneWrite: false,
    handler(req, seen) {
      const path = new URL(req.url).pathname
      const body = seen.body ? (JSON.parse(seen.body) as { model?: string; stream?: boolean; stream_options?: { include_usage?: boolean } }) : {}
      const model = body.model ?? 'fake-model'
      const text = Array.from({ length: fake.chunks }, (_, i) => `w${i} `).join('')
      const usage = fake.noUsage ? null : fake.usage
      if (path === '/v1/chat/completions') {
        if (!body.stream) return Response.json(openaiCompletion(model, text, usage))
        return sse(fake, body.stream_options?.include_usage ? openaiUsageFrames(model, fake.chunks, usage) : openaiFrames(model, fake.chunks))
      }
      if (path === '/v1/messages')
        return body.stream ? sse(fake, anthropicFrames(model, fake.chunks, usage)) : Response.json(anthropicMessage(model, text, usage))
      if (path === '/v1/responses')
        return body.stream ? sse(fake, responsesFrames(model, fake.chunks, usage)) : Response.json(responsesAnswer(model, text, usage))
      if (path === '/v1/embeddings')
        return Response.json({
          object: 'list',
          data: [{ object: 'embedding', index: 0, embedding: [0.1, 0.2, 0.3] }],
          model,
          ...(usage ? { usage: { prompt_tokens: usage.input, total_tokens: usage.input } } : {}),
        })
      return Response.json({ error: { message: `no fake route ${path}` } }, { status: 404 })
    },
  }
  return fake
}

function sse(fake: LlmFake, frames: string[]): Response {
  if (fake.oneWrite) frames = [frames.join('')]
  let i = 0
  return new Response(
    new ReadableStream({
      async pull(c) {
        if (fake.dieAfter !== null && i === fake.dieAfter) {
          // After a pause, as a connection that breaks: an error at once may end the body cleanly.
          await Bun.sleep(5)
          return c.error(new Error('fake upstream died mid-stream'))
        }
        if (i === frames.length) return c.close()
        if (fake.frameDelayMs) await Bun.sleep(fake.frameDelayMs)
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
