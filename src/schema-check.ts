/**
 * One way to refuse a value its TypeBox schema does not take: BAD_REQUEST naming the field and, said
 * plainly, what the schema takes. The REST routes' validation failures (app.ts) and the services'
 * own checks answer through it, and both hold a field to the same schema object (a route's body
 * model is built from the schemas its service checks), so a REST call, a console form, the chat and
 * an MCP tool are refused by one rule, in one shape.
 * errors: BAD_REQUEST (field, expected).
 */
import type { TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { ApiError } from './errors'

/** "integer, minimum 1, maximum 200": the schema of the failing field, said plainly. */
function expectedShape(schema: Record<string, unknown> | undefined): string | null {
  if (!schema) return null
  if (Array.isArray(schema.anyOf)) {
    // A union (literals, or t.Numeric's number|string): list what each branch accepts.
    const branches = (schema.anyOf as Record<string, unknown>[]).map((b) => (b.const !== undefined ? JSON.stringify(b.const) : expectedShape(b)))
    return branches.filter(Boolean).length ? `one of: ${branches.filter(Boolean).join(' | ')}` : null
  }
  const type = schema.type as string | undefined
  if (!type) return null
  const bounds = ['minimum', 'maximum', 'minLength', 'maxLength', 'pattern', 'format']
    .filter((k) => schema[k] !== undefined)
    .map((k) => `${k} ${String(schema[k])}`)
  if (Array.isArray(schema.enum)) bounds.push(`one of ${(schema.enum as unknown[]).join(', ')}`)
  return [type, ...bounds].join(', ')
}

/** A JSON pointer (`/agents/ag_1/daily_cap`) as the dotted field the error names. */
export const dottedPath = (pointer: string): string => pointer.replace(/^\//, '').replace(/\//g, '.')

/** The refusal of one failing value, its schema and where it sits. */
export function schemaRefusal(field: string, schema: Record<string, unknown> | undefined, message?: string): ApiError {
  return new ApiError('BAD_REQUEST', { field, expected: expectedShape(schema) ?? message ?? 'a valid value' })
}

/** Throws BAD_REQUEST unless `value` fits `schema`; `field` names it (a nested failure is named below it). */
export function checkField(schema: TSchema, value: unknown, field: string): void {
  if (Value.Check(schema, value)) return
  const first = Value.Errors(schema, value).First()
  const below = first ? dottedPath(first.path) : ''
  throw schemaRefusal(below ? `${field}.${below}` : field, first?.schema as Record<string, unknown> | undefined, first?.message)
}
