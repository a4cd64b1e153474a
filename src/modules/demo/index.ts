import { Elysia } from 'elysia'
import { http, type Http } from '../../http'
import type { Services } from '../../services'
import { DemoEcho, DemoFailure } from './model'

/**
 * The demo provider's upstream endpoints (mounted only while the catalog has the demo provider).
 * They take no bearer and no rate limit: the service calls them itself on every demo call, and
 * they do nothing but answer. Turned on by DEMO_PROVIDER=auto, they answer this machine only.
 */
export const demoRoutes = (s: Services, h: Http = http(s)) =>
  s.catalog.demoSlugs().length === 0
    ? new Elysia()
    : new Elysia()
        .onBeforeHandle(({ request, server }) => h.requireLocal('demo', request, server))
        .post('/demo/echo', ({ body }) => ({ demo: true as const, echo: body ?? {} }), {
          response: { 200: DemoEcho },
          detail: { summary: 'DEMO provider: echoes the body (what demo.echo calls)' },
        })
        .post(
          '/demo/flaky',
          ({ set }) => {
            set.status = 503
            return { demo: true as const, message: 'the demo provider always fails this call, so the caller is refunded' }
          },
          { response: { 503: DemoFailure }, detail: { summary: 'DEMO provider: always 503 (what demo.flaky calls)' } },
        )
