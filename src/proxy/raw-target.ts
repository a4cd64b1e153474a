/**
 * The request target exactly as the client sent it, before any URL parser resolved `..`,
 * `%2e%2e` or `\`. The listener (src/listen.ts) records it per Request; the proxy's path safety
 * reads it. A Request that did not come through the listener (app.handle in tests) has only its
 * parsed URL, which is also what would be forwarded, so the checks still hold for it.
 */
const targets = new WeakMap<Request, string>()

export function rememberRawTarget(request: Request, raw: string): void {
  targets.set(request, raw)
}

export function rawTarget(request: Request): string {
  const raw = targets.get(request)
  if (raw !== undefined) return raw
  const url = request.url
  // Skip "scheme://authority": the first '/' after it starts the origin-form target.
  const start = url.indexOf('/', url.indexOf('//') + 2)
  return start === -1 ? '/' : url.slice(start)
}
