/**
 * A tool's arguments checked as the REST route checks its body: the route's own TypeBox model
 * (unknown fields refused, as the strict REST bodies do), then the edge's text rule (no control
 * characters; FreeText fields may hold several lines).
 * errors: BAD_REQUEST (field, expected).
 */
import type { TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors'
import { Value } from '@sinclair/typebox/value'
import { checkText, multilinePaths } from '../edge/text'
import { ApiError } from '../errors'

export interface ArgsParser<T> {
  /** The schema as plain JSON Schema (TypeBox's symbol keys dropped), for tools/list. */
  jsonSchema: Record<string, unknown>
  parse(args: unknown): T
}

export function argsParser<T>(schema: TSchema): ArgsParser<T> {
  const multiline = multilinePaths(schema)
  // Compiled once: a passing check (every call) is then a few property tests (0.1 µs for
  // call_capability's arguments, against 1.6 µs for the interpreted Value.Errors walk, which is
  // kept for a failure's message).
  const check = TypeCompiler.Compile(schema)
  const jsonSchema = JSON.parse(JSON.stringify(schema)) as Record<string, unknown>
  // MCP wants an object schema even for a tool that takes nothing.
  jsonSchema.type ??= 'object'
  return {
    jsonSchema,
    parse(args) {
      const value = args ?? {}
      if (!check.Check(value)) {
        const err = Value.Errors(schema, value).First()
        if (err) throw badArgument(err)
      }
      checkText(value, multiline)
      return value as T
    },
  }
}

function badArgument(e: ValueError): ApiError {
  const field = e.path.replace(/^\//, '').replace(/\//g, '.') || 'arguments'
  if (e.type === ValueErrorType.ObjectAdditionalProperties) return new ApiError('BAD_REQUEST', { field, expected: 'absent (not a known field)' })
  return new ApiError('BAD_REQUEST', { field, expected: expectedOf(e.schema) ?? e.message })
}

/** "integer, minimum 1, maximum 200": what the failing field accepts, said plainly. */
function expectedOf(schema: TSchema): string | null {
  const s = schema as Record<string, unknown>
  if (Array.isArray(s.anyOf)) return `one of: ${(s.anyOf as TSchema[]).map((b) => (b.const !== undefined ? JSON.stringify(b.const) : expectedOf(b) ?? 'a value')).join(' | ')}`
  if (typeof s.type !== 'string') return null
  const bounds = ['minimum', 'maximum', 'minLength', 'maxLength', 'pattern'].filter((k) => s[k] !== undefined).map((k) => `${k} ${String(s[k])}`)
  return [s.type, ...bounds].join(', ')
}
