/**
 * A route of the app as Elysia's route table lists it (`app.routes`): what the OpenAPI document,
 * the edge checks and the MCP tools read from it (method, path, and the TypeBox models on its hooks).
 */
export interface RouteLike {
  method: string
  path: string
  hooks?: {
    body?: unknown
    query?: unknown
    params?: unknown
    response?: Record<string, unknown>
    detail?: { summary?: string }
  }
}
