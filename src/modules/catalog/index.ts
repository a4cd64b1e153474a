import { Elysia } from 'elysia'
import { bearerAuth, http, type Http } from '../../http'
import type { Services } from '../../services'
import { CapabilitiesResponse, SearchQuery, SearchResponse } from './model'
import { searchAnswer } from '../../catalog/search-answer'

export const catalogRoutes = (s: Services, h: Http = http(s)) =>
  new Elysia()
    .use(bearerAuth)
    .get(
      '/v1/search',
      async ({ query, bearer, request, server, set }) => {
        set.headers = await h.anonymous(request, server, bearer)
        return searchAnswer(s.catalog, query.q)
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
