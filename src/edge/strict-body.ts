/**
 * Refuses request bodies with fields their schema does not name. Elysia's default `normalize`
 * silently strips such fields before validating, so `additionalProperties: false` alone never
 * answers BAD_REQUEST; surfaces whose contract says "unknown fields → BAD_REQUEST" (support
 * problems are metadata only, policies must not half-apply a typo) add this as their `transform`
 * hook, which runs on the parsed body before Elysia cleans it.
 */
import type { TSchema } from '@sinclair/typebox'
import { ValueErrorType } from '@sinclair/typebox/errors'
import { Value } from '@sinclair/typebox/value'
import { ApiError } from '../errors'

export function rejectUnknownFields(schema: TSchema) {
  return ({ body }: { body: unknown }) => {
    for (const e of Value.Errors(schema, body)) {
      const field = e.path.slice(1).replace(/\//g, '.')
      if (e.type === ValueErrorType.ObjectAdditionalProperties) throw new ApiError('BAD_REQUEST', { field, expected: 'absent (not a known field)' })
      // A member that must be an object, sent as anything else (null, a number, 1e309, a string, an
      // array): the normaliser drops it too, and the request answered 200 having done nothing of
      // what it asked (`{"agents": {"<id>": null}}`, `{"account": 1e309}`). The body itself (an
      // empty path) is left to the route: an optional body may be absent.
      if (e.type === ValueErrorType.Object && field !== '') throw new ApiError('BAD_REQUEST', { field, expected: 'an object' })
    }
  }
}
