/**
 * Request bodies as the edge reads them. MAX_BODY_BYTES is exact: a declared Content-Length past it
 * is refused on arrival (app.ts), and a chunked body, which declares nothing, is counted as it is
 * read and refused at the first byte past it. Either way the answer is BAD_REQUEST with status 413.
 * A route that expects a JSON object gets one or BAD_REQUEST on `body`: Elysia's own parser would
 * take a form post for a JSON route, and on an optional body swallow malformed JSON as "no body".
 * errors: BAD_REQUEST (413 when too large).
 */
import { ApiError } from '../errors'
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../json-depth'
import { checkDepth } from './text'

/** BAD_REQUEST on `body` answered with 413 (docs/api.md §1), wherever it is rendered. */
class BodyTooLarge extends ApiError {
  override readonly status = 413
}

export const bodyTooLarge = (limit: number): ApiError => new BodyTooLarge('BAD_REQUEST', { field: 'body', expected: `at most ${limit} bytes` })

/** The body's bytes, refused past `limit`. A declared length was checked on arrival; Bun enforces it. */
export async function readBytes(request: Request, limit: number): Promise<Uint8Array> {
  if (request.headers.has('content-length')) return new Uint8Array(await request.arrayBuffer())
  if (!request.body) return new Uint8Array()
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > limit) {
      void reader.cancel().catch(() => {})
      throw bodyTooLarge(limit)
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks)
}

export async function readText(request: Request, limit: number): Promise<string> {
  // A declared length was checked on arrival: Bun decodes the body in one step (UTF-8, BOM dropped,
  // as TextDecoder does), a few µs less than a copy into a TextDecoder (issue 42).
  if (request.headers.has('content-length')) return request.text()
  return new TextDecoder().decode(await readBytes(request, limit))
}

/**
 * A streamed body (the proxy's) that errors at the first byte past `limit`, calling `over` first
 * (the reader of a failed stream cannot tell this from a broken connection); `count` gets the bytes
 * that went through.
 */
export function limitedStream(body: ReadableStream<Uint8Array>, limit: number, count: (bytes: number) => void, over: () => void): ReadableStream<Uint8Array> {
  let n = 0
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, c) {
        n += chunk.byteLength
        if (n <= limit) return c.enqueue(chunk)
        over()
        c.error(bodyTooLarge(limit))
      },
      flush() {
        count(n)
      },
    }),
  )
}

const JSON_TYPE = /^application\/([\w.-]+\+)?json$/i

/** Each JSON body as parsed, before Elysia normalises it: the edge's text check reads every field of it. */
const parsed = new WeakMap<Request, unknown>()
export const parsedBody = (request: Request): unknown => parsed.get(request)

/**
 * Elysia parse hook of a route whose body is a JSON object (`parse: h.json`). An empty body is left
 * to the route's schema (optional bodies accept it); anything else must be a JSON object sent as JSON.
 * `keep`, for a body that is another party's document (a Telegram update): the part the route
 * reads, which is then all the schema, the edge's text check and the handler see.
 */
export const jsonObjectParser = (limit: number, keep: (value: Record<string, unknown>) => Record<string, unknown> = (v) => v) =>
  // Named: a test finds every route with a body schema parsed by it.
  async function jsonObject({ request }: { request: Request }, contentType: string): Promise<Record<string, unknown> | undefined> {
    // Left unread, an empty body reaches Elysia's own parser, which lets an optional body be absent.
    if (request.body === null || request.headers.get('content-length') === '0') return undefined
    const text = await readText(request, limit)
    if (text.trim() === '') return undefined
    if (!JSON_TYPE.test(contentType)) throw new ApiError('BAD_REQUEST', { field: 'body', expected: 'a JSON object sent as Content-Type: application/json' })
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      throw new ApiError('BAD_REQUEST', { field: 'body', expected: 'valid JSON' })
    }
    if (!value || typeof value !== 'object' || Array.isArray(value)) throw new ApiError('BAD_REQUEST', { field: 'body', expected: 'a JSON object' })
    const body = keep(value as Record<string, unknown>)
    // Refused here, before the schema sees it (text.ts checkDepth); the text pass keeps the walk off ordinary bodies.
    if (nestsDeeperThan(text, MAX_JSON_DEPTH)) checkDepth(body)
    parsed.set(request, body)
    return body
  }
