/**
 * GET /metrics: Prometheus text format. Aggregate counters only (no account, token or key ever
 * appears in a label). Open when METRICS_TOKEN is unset (scrape it on a private network);
 * with METRICS_TOKEN set it needs `Authorization: Bearer <METRICS_TOKEN>`. Not rate limited:
 * a scraper polls it on a schedule, like /status.
 */
import { timingSafeEqual } from 'node:crypto'
import { Elysia } from 'elysia'
import { ApiError } from '../../errors'
import { bearerAuth } from '../../http'
import type { Services } from '../../services'

function same(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

export const metricsRoutes = (s: Services) =>
  new Elysia().use(bearerAuth).get(
    '/metrics',
    async ({ bearer }) => {
      const want = s.cfg.METRICS_TOKEN
      if (want && !(bearer && same(bearer, want))) throw new ApiError('UNAUTHORIZED')
      return new Response(await s.metrics.registry.metrics(), { headers: { 'content-type': s.metrics.registry.contentType } })
    },
    { detail: { summary: 'Prometheus metrics: requests, money movements, outbox lag, flush latency, proxy bytes, rate-limit rejections' } },
  )
