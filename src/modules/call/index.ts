import { Elysia, t } from 'elysia'
import { ApiError } from '../../errors'
import { bearerAuth, http, type Http } from '../../http'
import type { Services } from '../../services'
import { CallResponse } from './model'
import { callCapability, IDEMPOTENCY_KEY } from '../../calls/capability-call'
import { ProviderKeys } from '../../vault/provider-key'
import { readText } from '../../edge/body'
import { refusalAfterAdmission } from '../../auth/refusal-after-admission'
import { runBudgetOf } from '../../paid-request/run-header'


export const callRoutes = (s: Services, h: Http = http(s)) => {
  // Read through `s` on each request: the vault's lookup may be swapped in after boot (and is in tests).
  const keys = new ProviderKeys(() => s.vaultedKey, s.log)
  return new Elysia().use(bearerAuth).post(
    '/v1/call/:slug',
    async ({ bearer, params, request, server }) => {
      // The token's own rate limit and state are checked inside the debit script; a request with
      // no valid bearer is unauthenticated and counts against its client address.
      const principal = await s.guard.tokens.resolve(bearer)
      if (!principal) {
        await h.anonymous(request, server)
        throw new ApiError('UNAUTHORIZED')
      }
      const { idempotencyKey, rawBody, run } = await refusalAfterAdmission(s, principal, async () => {
        const key = request.headers.get('idempotency-key')
        if (key !== null && !IDEMPOTENCY_KEY.test(key)) throw new ApiError('BAD_REQUEST', { field: 'Idempotency-Key', expected: '1 to 255 printable ASCII characters' })
        const run = runBudgetOf(request.headers.get('x-budget-run'), principal)
        // Content-Length is checked on arrival (app.ts); a chunked body is counted as it is read.
        return { idempotencyKey: key, rawBody: await readText(request, s.cfg.MAX_BODY_BYTES), run }
      })
      const answer = await callCapability(s, keys, { principal, slug: params.slug, rawBody, idempotencyKey, signal: request.signal, run })
      return new Response(answer.body, { status: answer.status, headers: { 'content-type': 'application/json' } })
    },
    {
      // The raw body is read here: it is hashed for Idempotency-Key and validated against the
      // capability's own params schema, which Elysia cannot know at route definition.
      parse: 'none',
      params: t.Object({ slug: t.String() }),
      detail: { summary: 'Call a capability; debits its price, refunded when the provider fails' },
      response: { 200: CallResponse },
    },
  )
}
