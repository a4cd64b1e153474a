/**
 * An OpenAI-shaped fake that stores what it creates, as the real API does for one organisation:
 * every account on the house lane shares it, which is what the ownership checks must make safe.
 *   POST   /v1/responses                     a response (`resp_<n>`), plain or streamed; stored unless store: false
 *   GET    /v1/responses                     every stored response (no such list in the API: a probe)
 *   GET    /v1/responses/{id}[/input_items]  DELETE /v1/responses/{id}  POST /v1/responses/{id}/cancel
 *   POST   /v1/chat/completions              a completion (`chatcmpl-<n>`), plain or streamed; stored when store: true
 *   GET    /v1/chat/completions              every stored completion
 *   GET    /v1/chat/completions/{id}[/messages]  POST (metadata update)  DELETE
 * Answers are the LLM fake's (usage included), with their ids made unique.
 */
import { openaiCompletion, openaiFrames, openaiUsageFrames, responsesAnswer, responsesFrames } from './llm'

export interface OpenAIStore {
  handler(req: Request, seen: { body: string }): Response
  responses: Map<string, unknown>
  completions: Map<string, unknown>
}

const USAGE = { input: 5, cached: 0, output: 5 }

export function createOpenAIStore(): OpenAIStore {
  let n = 0
  const responses = new Map<string, unknown>()
  const completions = new Map<string, unknown>()
  const stream = (frames: string[]) =>
    new Response(frames.join(''), { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } })
  const notFound = () => Response.json({ error: { message: 'not found', type: 'invalid_request_error', code: null } }, { status: 404 })
  const list = (m: Map<string, unknown>) => Response.json({ object: 'list', data: [...m.values()], has_more: false })
  return {
    responses,
    completions,
    handler(req, seen) {
      const path = new URL(req.url).pathname
      const body = seen.body ? (JSON.parse(seen.body) as Record<string, any>) : {}
      const model = body.model ?? 'fake-model'
      const parts = path.split('/').filter(Boolean).map(decodeURIComponent) // v1, responses|chat, … (decoded, as the API routes)
      if (path === '/v1/responses') {
        if (req.method === 'GET') return list(responses)
        const id = `resp_${++n}x${Math.random().toString(36).slice(2, 10)}`
        const answer = JSON.parse(JSON.stringify(responsesAnswer(model, 'w0 w1 ', USAGE)).replaceAll('resp_fake', id))
        if (body.store !== false) responses.set(id, answer)
        if (body.stream) return stream(responsesFrames(model, 2, USAGE).map((f) => f.replaceAll('resp_fake', id)))
        return Response.json(answer)
      }
      if (parts[1] === 'responses') {
        const r = responses.get(parts[2]!)
        if (!r) return notFound()
        if (req.method === 'DELETE') {
          responses.delete(parts[2]!)
          return Response.json({ id: parts[2], object: 'response.deleted', deleted: true })
        }
        if (parts[3] === 'input_items') return Response.json({ object: 'list', data: [], first_id: null, last_id: null, has_more: false })
        if (parts[3] === 'cancel') return Response.json({ ...(r as object), status: 'cancelled' })
        return Response.json(r)
      }
      if (path === '/v1/chat/completions') {
        if (req.method === 'GET') return list(completions)
        const id = `chatcmpl-${++n}x${Math.random().toString(36).slice(2, 10)}`
        const answer = JSON.parse(JSON.stringify(openaiCompletion(model, 'w0 w1 ', USAGE)).replaceAll('chatcmpl-fake', id))
        if (body.store === true) completions.set(id, answer)
        if (body.stream) {
          const frames = body.stream_options?.include_usage ? openaiUsageFrames(model, 2, USAGE) : openaiFrames(model, 2)
          return stream(frames.map((f) => f.replaceAll('chatcmpl-fake', id)))
        }
        return Response.json(answer)
      }
      if (parts[1] === 'chat' && parts[2] === 'completions') {
        const c = completions.get(parts[3]!) as Record<string, unknown> | undefined
        if (!c) return notFound()
        if (req.method === 'DELETE') {
          completions.delete(parts[3]!)
          return Response.json({ id: parts[3], object: 'chat.completion.deleted', deleted: true })
        }
        if (req.method === 'POST') {
          c.metadata = body.metadata
          return Response.json(c)
        }
        if (parts[4] === 'messages') return Response.json({ object: 'list', data: [], first_id: null, last_id: null, has_more: false })
        return Response.json(c)
      }
      return notFound()
    },
  }
}
