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
    for (const e of Value.Errors(schema, body))
      if (e.type === ValueErrorType.ObjectAdditionalProperties)
        throw new ApiError('BAD_REQUEST', { field: e.path.slice(1).replace(/\//g, '.'), expected: 'absent (not a known field)' })
  }
}
