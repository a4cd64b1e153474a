/**
 * The REST routes' own TypeBox models, looked up in the app's route table: a tool that adapts a
 * route takes its input schema (and its description) from that route, so the MCP tool and the
 * REST endpoint cannot drift apart. The table is read lazily: it is complete only once the app is.
 */
import type { TSchema } from '@sinclair/typebox'
import type { RouteLike } from '../route-table'

/** `'POST /v1/support'`: a route of the app, by method and path as registered. */
export type RouteRef = `${'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH'} /${string}`

export interface RouteSchemas {
  /** The route's body, query or params model; throws when the route or the part is missing. */
  part(ref: RouteRef, part: 'body' | 'query' | 'params'): TSchema
  /** The route's one-line summary (its OpenAPI summary). */
  summary(ref: RouteRef): string
  /** The model of the route's success answer (200 or 201), if it declares one. */
  answer(ref: RouteRef): TSchema | undefined
}

export function routeSchemas(routes: () => RouteLike[]): RouteSchemas {
  let byRef: Map<string, RouteLike> | null = null
  const route = (ref: RouteRef): RouteLike => {
    byRef ??= new Map(routes().map((r) => [`${r.method} ${r.path}`, r]))
    const r = byRef.get(ref)
    // A renamed route must fail loudly at the first listing, not leave a tool without a schema.
    if (!r) throw new Error(`MCP tool adapts ${ref}, which the app does not register`)
    return r
  }
  return {
    part(ref, part) {
      const schema = route(ref).hooks?.[part]
      if (!schema) throw new Error(`MCP tool adapts ${ref}, whose ${part} has no schema`)
      return schema as TSchema
    },
    summary: (ref) => route(ref).hooks?.detail?.summary ?? '',
    answer(ref) {
      const response = route(ref).hooks?.response
      return (response?.['200'] ?? response?.['201']) as TSchema | undefined
    },
  }
}
