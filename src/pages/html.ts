/**
 * Server-rendered pages for the human in the loop (consent, credit packs, token recovery): plain
 * HTML that works without JavaScript, no external asset, a CSP that forbids scripts, no Referer
 * (the URL carries a secret ref or code) and no caching.
 */
import { randomId } from '../auth/tokens'
import { ApiError } from '../errors'
import { errorFields, type Log } from '../log'
import { readText } from '../edge/body'
import { checkText } from '../edge/text'
import { noteError } from '../observe'

export const PAGE_HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' https://checkout.stripe.com; base-uri 'none'; frame-ancestors 'none'",
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'x-robots-tag': 'noindex',
}

export function esc(s: string | number): string {
  return String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

export function htmlPage(status: number, title: string, main: string, headers: Record<string, string> = {}): Response {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${esc(title)}</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:38rem;margin:3rem auto;padding:0 1rem;color:#1b1b1b}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}.error{color:#a40000}.ok{color:#0a6b22}
label{display:block;font-weight:600;margin:1rem 0 .3rem}small{font-weight:400;color:#555}
input{width:100%;box-sizing:border-box;padding:.5rem;font:inherit}
input.mono,code,.token{font-family:ui-monospace,monospace}
.token{display:block;word-break:break-all;background:#f3f3f3;padding:.75rem;border-radius:4px}
button{margin-top:1rem;padding:.5rem 1.2rem;font:inherit}.note{color:#555;font-size:.9rem}
.pack{border:1px solid #ddd;border-radius:6px;padding:.5rem 1rem;margin:1rem 0}
</style></head><body><main>
${main}
</main></body></html>`
  return new Response(html, { status, headers: { ...PAGE_HEADERS, ...headers } })
}

export function redirect(url: string): Response {
  return new Response(null, { status: 303, headers: { location: url, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' } })
}

/**
 * A form post (urlencoded) or a JSON object, as string fields; at most `limit` bytes, and no field
 * with a control character (edge/text.ts: BAD_REQUEST naming it).
 */
export async function readForm(request: Request, limit: number): Promise<Record<string, string>> {
  const type = request.headers.get('content-type') ?? ''
  const out: Record<string, string> = {}
  const text = await readText(request, limit)
  try {
    if (type.includes('application/json')) {
      const body = JSON.parse(text) as unknown
      if (body && typeof body === 'object')
        for (const [k, v] of Object.entries(body)) if (typeof v === 'string' || typeof v === 'number') out[k] = String(v)
    } else for (const [k, v] of new URLSearchParams(text)) out[k] = v
  } catch {
    // A malformed body is an empty form: the page answers with its own field errors.
  }
  checkText(out)
  return out
}

/** Browsers get pages; a client that asks for JSON gets the error body. */
export function wantsJson(request: Request): boolean {
  const accept = request.headers.get('accept') ?? ''
  return accept.includes('application/json') && !accept.includes('text/html')
}

/** The server-rendered pages outside the console (the vault link's are under /vault/). */
const PAGE_PATHS: ReadonlySet<string> = new Set(['/topup', '/topup/done', '/mandate', '/mandate/done', '/rotate'])

/**
 * Which surface a path belongs to, for a refusal answered before its handler ran (the edge's
 * checks, a declared body past MAX_BODY_BYTES, a schema, auth first, an unknown path): `console`
 * (the owner console), `page` (a page a person opens from a link: consent, credit packs, token
 * recovery, a vault link), or null (the API: /v1, /mcp, the proxy, ... keep their JSON errors).
 * By path, not route: the body-size refusal comes before routing. test/http/edge.pages.security
 * holds every route whose summary says "HTML" to this list.
 */
export function browserSurface(pathname: string): 'console' | 'page' | null {
  if (pathname === '/console' || pathname.startsWith('/console/')) return 'console'
  if (PAGE_PATHS.has(pathname) || pathname.startsWith('/vault/')) return 'page'
  return null
}

/** An error as a page: the registry's code and message (the message states the remedy). */
export function errorPage(e: ApiError, text?: string): Response {
  const body = e.body()
  return htmlPage(
    e.status,
    e.code,
    `<h1 class="error"><code>${esc(e.code)}</code></h1>
<p>${esc(text ?? String(body.message))}</p>`,
    e.headers,
  )
}

/**
 * Runs a page handler: an ApiError becomes an error page (or the JSON error body for a client that
 * asks for JSON); anything else is logged with a request id and shown as INTERNAL.
 */
export async function pageAnswer(log: Log, request: Request, run: () => Promise<Response>): Promise<Response> {
  try {
    return await run()
  } catch (e) {
    let err: ApiError
    if (e instanceof ApiError) err = e
    else {
      const requestId = randomId(8)
      log.error('unhandled', { request_id: requestId, path: new URL(request.url).pathname, ...errorFields(e) })
      err = new ApiError('INTERNAL', { request_id: requestId })
    }
    noteError(request, err)
    const res = wantsJson(request) ? err.toResponse() : errorPage(err)
    res.headers.set('cache-control', 'no-store')
    res.headers.set('referrer-policy', 'no-referrer')
    return res
  }
}

/** Adds the rate-limit headers of the admission to a page. */
export function withHeaders(res: Response, headers: Record<string, string>): Response {
  for (const [k, v] of Object.entries(headers)) res.headers.set(k, v)
  return res
}
