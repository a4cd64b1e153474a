/**
 * For the tests that hold a direct path (served without Elysia's router: the proxy's, the paid
 * call's) to the routed one: an answer as the two are compared — status, headers and body, less
 * what differs from one call to the next (the call id, the balance after it, the request id, the
 * date).
 */
import type { App } from '../../src/app'

const VOLATILE_HEADERS = new Set(['date', 'x-request-id', 'x-pab-call-id', 'x-pab-balance'])
const VOLATILE_FIELDS = new Set(['call_id', 'balance', 'request_id'])

export interface Answer {
  status: number
  headers: Record<string, string>
  body: unknown
}

/** `res` as compared: its volatile headers and JSON fields read '…'; a body that is no JSON, as text. */
export async function comparable(res: Response): Promise<Answer> {
  const headers: Record<string, string> = {}
  res.headers.forEach((v, k) => (headers[k] = VOLATILE_HEADERS.has(k) ? '…' : v))
  const text = await res.text()
  let body: unknown = text
  try {
    body = JSON.parse(text, (k, v) => (VOLATILE_FIELDS.has(k) ? '…' : v))
  } catch {
    // not JSON: compared as text
  }
  return { status: res.status, headers, body }
}

/** The answer `app` gives the request `make` builds, as compared. */
export async function answerOf(app: App, make: () => Request): Promise<Answer> {
  return comparable(await app.handle(make()))
}
