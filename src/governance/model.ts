import { Type as T } from '@sinclair/typebox'

/** Credits in a cap; the bound keeps every cap exact in Lua's doubles. */
export const Credits = T.Integer({ minimum: 0, maximum: 1_000_000_000_000 })
