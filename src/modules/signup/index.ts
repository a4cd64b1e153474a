import { Elysia } from 'elysia'
import type { Services } from '../../services'
import { bearerAuth, http, type Http } from '../../http'
import { ApiError } from '../../errors'
import { pageAnswer, readForm, wantsJson, withHeaders } from '../../pages/html'
import { SignupBody, SignupResponse, RotateResponse, RotateBody, RotateRequested, RecoveryQuery } from './model'
import { rotateOwnerToken, signup } from './service'
import { confirmRotatePage, newTokenPage, recoveryErrorPage } from './pages'
import { inspectRecovery, redeemRecovery, requestRecovery } from './recovery'
import { noteError } from '../../observe'
import { endChatLinks } from '../../telegram/operator'

export const signupRoutes = (s: Services, h: Http = http(s)) =>
  new Elysia()
    .use(bearerAuth)
    .post(
      '/v1/signup',
      async ({ body, request, server, set }) => {
        set.headers = await h.anonymous(request, server)
        set.status = 201
        return signup(s.ctx, body)
      },
      { parse: h.json, body: SignupBody, response: { 201: SignupResponse }, detail: { summary: 'Create an account: owner token (shown once) and 500 credits' } },
    )
    .post(
      '/v1/token/rotate',
      async (c) => {
        const { bearer, body, request, server, set } = c
        // No bearer, an e-mail: the lost-token path (202, the same answer for every e-mail).
        if (bearer === undefined && body?.email !== undefined) {
          set.headers = await h.anonymous(request, server)
          set.status = 202
          return requestRecovery(s, body.email)
        }
        const { principal, headers } = await h.admitted(c)
        set.headers = headers
        const rotated = await rotateOwnerToken(s.ctx, s.guard.tokens, principal.accountId, principal.tokenHash)
        await endChatLinks(s, principal.accountId)
        return rotated
      },
      {
        parse: h.json,
        body: RotateBody,
        response: { 200: RotateResponse, 202: RotateRequested },
        detail: {
          summary:
            'Replace the owner token: with the operator bearer → 200 {token} at once; without a bearer, {email} → 202 and a one-time link (10 minutes) is e-mailed if the account exists',
        },
      },
    )
    .get(
      '/rotate',
      ({ query, request, server }) =>
        pageAnswer(s.log, request, async () => {
          const rate = await h.anonymous(request, server)
          return recoveryAnswer(request, rate, async () => {
            const { email } = await inspectRecovery(s, query.code)
            return confirmRotatePage(email, query.code!)
          })
        }),
      { query: RecoveryQuery, detail: { summary: 'HTML: the e-mailed recovery link; a confirm button (POST /rotate) — opening it changes nothing' } },
    )
    .post(
      '/rotate',
      ({ request, server }) =>
        pageAnswer(s.log, request, async () => {
          const rate = await h.anonymous(request, server)
          const { code } = await readForm(request, s.cfg.MAX_BODY_BYTES)
          return recoveryAnswer(request, rate, async () => {
            const { token, email } = await redeemRecovery(s, code)
            return newTokenPage(email, token)
          })
        }),
      { parse: 'none', detail: { summary: 'HTML form post {code}: shows a new owner token once and invalidates the old one' } },
    )

/** A recovery page, or its link error: the page's own wording for browsers, the error body (with renew_via) for JSON clients. */
async function recoveryAnswer(request: Request, rate: Record<string, string>, run: () => Promise<Response>): Promise<Response> {
  try {
    return withHeaders(await run(), rate)
  } catch (e) {
    if (!(e instanceof ApiError) || (e.code !== 'LINK_INVALID' && e.code !== 'LINK_USED')) throw e
    noteError(request, e.code)
    if (wantsJson(request)) return new ApiError(e.code, { renew_via: 'POST /v1/token/rotate {"email"}' }).toResponse()
    return withHeaders(recoveryErrorPage(e), rate)
  }
}
