import { Elysia } from 'elysia'
import { errorsMarkdown } from '../../errors'
import { bearerAuth, http, type Http } from '../../http'
import type { Services } from '../../services'
import { PublicStatsResponse, StatusResponse } from './model'
import { publicStats, serviceStatus } from './service'
import { homeAnswer } from './home'

export const publicRoutes = (s: Services, openapi: () => unknown, h: Http = http(s)) =>
  new Elysia()
    .use(bearerAuth)
    // Health checks poll /status; it is exempt from the per-IP limit so probes never trip it.
    .get('/status', () => serviceStatus(s), { response: { 200: StatusResponse }, detail: { summary: 'Public service status' } })
    .get(
      '/v1/public-stats',
      async ({ bearer, request, server, set }) => {
        set.headers = await h.anonymous(request, server, bearer)
        return publicStats(s)
      },
      { response: { 200: PublicStatsResponse }, detail: { summary: 'Organic calls routed, credits honored' } },
    )
    .get(
      '/',
      async ({ bearer, request, server, set }) => {
        set.headers = await h.anonymous(request, server, bearer)
        return homeAnswer(request, s.cfg.BASE_URL)
      },
      { detail: { summary: 'Where to go from here: the console for a person, the route list and the OpenAPI document for a program' } },
    )
    .get(
      '/errors.md',
      async ({ bearer, request, server, set }) => {
        set.headers = { ...(await h.anonymous(request, server, bearer)), 'content-type': 'text/markdown; charset=utf-8' }
        return errorsMarkdown()
      },
      { detail: { summary: 'The error catalog' } },
    )
    .get(
      '/openapi.json',
      async ({ bearer, request, server, set }) => {
        set.headers = await h.anonymous(request, server, bearer)
        return openapi()
      },
      { detail: { summary: 'This document' } },
    )
