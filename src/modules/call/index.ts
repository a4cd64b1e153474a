import { Elysia, t } from 'elysia'
import { ApiError } from '../../errors'
import { bearerAuth, http, type Http, type MaybeServer } from '../../http'
import type { Services } from '../../services'
import { CallResponse } from './model'
import { callCapability, IDEMPOTENCY_KEY } from '../../calls/capability-call'
import { ProviderKeys } from '../../vault/provider-key'
import { readText } from '../../edge/body'
import { refusalAfterAdmission } from '../../auth/refusal-after-admission'
import { runBudgetOf, type RunBudget } from '../../paid-request/run-header'
import { idForAnswer } from '../../observe'

/** The paid call's route, as Elysia knows it and as the request counters name it. */
export const CALL_ROUTE = '/v1/call/:slug'
const PREFIX = '/v1/call/'
const JSON_TYPE = { 'content-type': 'application/json' }

/**
 * The paid call's endpoint: its Elysia route (`routes`), and the same handler reached without the
 * router (`direct` names the requests it takes, `serve` answers them; app.ts passes them through
 * the app's hooks itself). Why: the service's hottest route paid Elysia's dispatch — its router,
 * the global hooks, the derive, the error chain — on every call (issue 42).
 * test/http/call.direct.test.ts holds the two paths' answers equal.
 */
export function callEndpoint(s: Services, h: Http = http(s)) {
  // Read through `s` on each request: the vault's lookup may be swapped in after boot (and is in tests).
  const keys = new ProviderKeys(() => s.vaultedKey, s.log)
  const serve = async (bearer: string | undefined, slug: string, request: Request, server: MaybeServer): Promise<Response> => {
    // The token's own rate limit and state are checked inside the debit script; a request with
    // no valid bearer is unauthenticated and counts against its client address.
    const principal = await s.guard.tokens.resolve(bearer)
    if (!principal) {
      await h.anonymous(request, server)
      throw new ApiError('UNAUTHORIZED')
    }
    let idempotencyKey: string | null
    let rawBody: string
    let run: RunBudget | undefined
    try {
      idempotencyKey = request.headers.get('idempotency-key')
      if (idempotencyKey !== null && !IDEMPOTENCY_KEY.test(idempotencyKey)) throw new ApiError('BAD_REQUEST', { field: 'Idempotency-Key', expected: '1 to 255 printable ASCII characters' })
      run = runBudgetOf(request.headers.get('x-budget-run'), principal)
      // Content-Length is checked on arrival (app.ts); a chunked body is counted as it is read.
      rawBody = await readText(request, s.cfg.MAX_BODY_BYTES)
    } catch (refused) {
      // Answered after the admission the debit would have made (refusalAfterAdmission), as before the debit.
      await refusalAfterAdmission(s, principal, () => {
        throw refused
      })
      throw refused
    }
    const answer = await callCapability(s, keys, { principal, slug, rawBody, idempotencyKey, signal: request.signal, run })
    const id = idForAnswer(request)
    return new Response(answer.body, { status: answer.status, headers: id === undefined ? JSON_TYPE : { 'content-type': 'application/json', 'x-request-id': id } })
  }
  const routes = () =>
    new Elysia().use(bearerAuth).post(CALL_ROUTE, ({ bearer, params, request, server }) => serve(bearer, params.slug, request, server), {
      // The raw body is read here: it is hashed for Idempotency-Key and validated against the
      // capability's own params schema, which Elysia cannot know at route definition.
      parse: 'none',
      params: t.Object({ slug: t.String() }),
      detail: { summary: 'Call a capability; debits its price, refunded when the provider fails' },
      response: { 200: CallResponse },
    })
  /**
   * The slug of a request the route would serve with exactly this slug, or null for the router to
   * answer: POST on `/v1/call/<slug>`, the path cut from the URL as Elysia cuts it. A slug with a
   * `%` goes to the router too: it decodes it (and refuses what does not decode) in its own way.
   * A trailing slash, another method (HEAD, OPTIONS) and everything else keep the router.
   */
  const direct = (request: Request): string | null => {
    if (request.method !== 'POST') return null
    const url = request.url
    const start = url.indexOf('/', 11)
    if (start === -1 || !url.startsWith(PREFIX, start)) return null
    const query = url.indexOf('?', start + 1)
    const slug = url.substring(start + PREFIX.length, query === -1 ? undefined : query)
    if (slug === '' || slug.includes('/') || slug.includes('%')) return null
    return slug
  }
  return { routes, direct, serve }
}
