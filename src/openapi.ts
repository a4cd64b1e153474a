/**
 * The OpenAPI 3 document, built from the routes themselves: every route's body, query and
 * response schemas are the same TypeBox models that validate it, and every error response is the
 * registry's flat body. Nothing here is written by hand per route.
 */
import { OptionalKind } from '@sinclair/typebox'
import { ERRORS } from './errors'
import { VERSION } from './version'
import type { RouteLike } from './route-table'
import { accessOf, isPublic } from './route-access'


/** Strips TypeBox's symbol keys (JSON.stringify drops them) so the schema is plain JSON Schema. */
const plain = (schema: unknown) => JSON.parse(JSON.stringify(schema)) as Record<string, unknown>

export function buildOpenApi(app: { routes: RouteLike[] }) {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const r of app.routes) {
    // Elysia's wildcard is the spec's `{path}` (POST /proxy/{provider}/{path}); OpenAPI has no `*`.
    const path = r.path.replace(/:(\w+)/g, '{$1}').replace(/\/\*$/, '/{path}')
    const h = r.hooks ?? {}
    const op: Record<string, unknown> = {
      summary: h.detail?.summary,
      responses: {
        ...Object.fromEntries(
          Object.entries(h.response ?? {}).map(([status, schema]) => [status, { description: 'OK', content: { 'application/json': { schema: plain(schema) } } }]),
        ),
        default: { description: 'Structured error (see /errors.md)', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
      },
    }
    const parameters: { name: string; in: 'path' | 'query'; required: boolean; schema: unknown }[] = []
    for (const [where, schema] of [['path', h.params], ['query', h.query]] as const) {
      const props = (schema as { properties?: Record<string, unknown>; required?: string[] } | undefined)?.properties ?? {}
      const required = new Set((schema as { required?: string[] } | undefined)?.required ?? [])
      for (const [name, s] of Object.entries(props)) parameters.push({ name, in: where, required: where === 'path' || required.has(name), schema: plain(s) })
    }
    // OpenAPI requires every templated parameter to be declared; a route without a params model
    // (the proxy's {path}, a few ids) gets a plain string.
    for (const name of [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!)) {
      if (!parameters.some((x) => x.in === 'path' && x.name === name)) parameters.push({ name, in: 'path', required: true, schema: { type: 'string' } })
    }
    if (parameters.length) op.parameters = parameters
    // A body wrapped in T.Optional (POST /v1/topup, POST /v1/token/rotate) may be left out.
    const optional = (h.body as Record<symbol, unknown> | undefined)?.[OptionalKind] === 'Optional'
    if (h.body) op.requestBody = { required: !optional, content: { 'application/json': { schema: plain(h.body) } } }
    // Each route's security is its entry in the route table (route-access.ts). The owner console's
    // pages sign in with a form and then ride a session cookie, not a bearer.
    const access = accessOf(r.method, r.path)
    if (access === 'console-public') op.security = []
    else if (access === 'console') op.security = [{ consoleSession: [] }]
    else if (!isPublic(access)) op.security = [{ bearer: [] }]
    ;(paths[path] ??= {})[r.method.toLowerCase()] = op
  }
  return {
    openapi: '3.0.3',
    info: { title: 'Prepaid API Balance', version: VERSION, description: 'A prepaid, capped, auditable API balance for AI agents.' },
    paths,
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer' },
        consoleSession: { type: 'apiKey', in: 'cookie', name: 'pab_console', description: 'Owner console session (docs/api.md §9): set by POST /console/sign-in' },
      },
      schemas: {
        Error: {
          type: 'object',
          required: ['error', 'message'],
          properties: { error: { type: 'string', enum: Object.keys(ERRORS) }, message: { type: 'string' } },
          additionalProperties: true,
        },
      },
    },
  }
}
