import { Elysia } from 'elysia'
import type { Services } from '../../services'
import { bearerAuth, http, type Http } from '../../http'
import { SignupBody, SignupResponse, RotateResponse } from './model'
import { rotateOwnerToken, signup } from './service'

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
      { body: SignupBody, response: { 201: SignupResponse }, detail: { summary: 'Create an account: owner token (shown once) and 500 credits' } },
    )
    .post(
      '/v1/token/rotate',
      async ({ bearer, request, server, set }) => {
        const { principal, headers } = await h.operator(bearer, request, server)
        set.headers = headers
        return rotateOwnerToken(s.ctx, s.guard.tokens, principal.accountId, principal.tokenHash)
      },
      { response: { 200: RotateResponse }, detail: { summary: 'Replace the owner token (operator bearer)' } },
    )
