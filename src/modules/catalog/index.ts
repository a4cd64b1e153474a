import { Elysia } from 'elysia'
import { bearerAuth, http, type Http } from '../../http'
import type { Services } from '../../services'
import { CapabilitiesResponse, SearchQuery, SearchResponse } from './model'

export const catalogRoutes = (s: Services, h: Http = http(s)) =>
  new Elysia()
    .use(bearerAuth)
    .get(
      '/v1/search',
      async ({ query, bearer, request, server, set }) => {
        set.headers = await h.anonymous(request, server, bearer)
        return {
          query: query.q,
          results: s.catalog.search(query.q).map((c) => ({
            slug: c.slug,
            lane: c.lane,
            price: c.price,
            params: c.params,
            provider: c.provider,
            description: c.description,
            status: s.catalog.state(c),
            ...(c.demo ? { demo: true } : {}),
          })),
        }
      },
      { query: SearchQuery, response: { 200: SearchResponse }, detail: { summary: 'Search the capability catalog' } },
    )
    .get(
      '/capabilities',
      async ({ bearer, request, server, set }) => {
        set.headers = await h.anonymous(request, server, bearer)
        return { ...s.catalog.byState(), demo: s.catalog.demoSlugs() }
      },
      { response: { 200: CapabilitiesResponse }, detail: { summary: 'What is live, paused or not configured' } },
    )
