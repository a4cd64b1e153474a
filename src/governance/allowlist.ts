/**
 * Allowlists (docs/api.md §5): lists of patterns, each a capability slug (`web.search`), a glob with
 * `*` (`openai.*`, `proxy:*`), a proxy route (`proxy:openai`) or a metered route's models
 * (`proxy:openai/gpt-4o*`, docs/api.md §7). `null` allows everything, `[]`
 * nothing. Stored as one hash field of patterns joined by "\n" (field absent = null), which is the
 * form debit.lua matches against.
 * errors: BAD_REQUEST (more than MAX_PATTERNS patterns, one over 150 characters, a pattern that
 *         could never match a target).
 */
import { Type as T } from '@sinclair/typebox'
import { ApiError } from '../errors'
import { checkField } from '../schema-check'

/** Slug-shaped or proxy-route-shaped, `*` allowed anywhere; no newline can get in. */
const PATTERN = /^(?:[a-z0-9*][a-z0-9._*-]{0,79}|proxy:[a-z0-9*][a-z0-9_*-]{0,63}(?:\/[a-z0-9*][a-z0-9._:*-]{0,79})?)$/
const EXPECTED = 'a slug (web.search), a glob with * (openai.*), proxy:<provider> or proxy:<provider>/<model-glob>; lowercase'
export const MAX_PATTERNS = 100

export const AllowlistSchema = T.Union([T.Array(T.String({ maxLength: 150 }), { maxItems: MAX_PATTERNS }), T.Null()], {
  description: 'Patterns: a slug (web.search), a glob (openai.*) or a proxy route (proxy:openai). null allows everything, [] nothing.',
})

/**
 * Validates (AllowlistSchema, as the REST bodies do, then each pattern) and normalises (deduplicated,
 * order kept) a list for storage; null stays null. Every allowlist written passes through here.
 */
export function encodeAllowlist(list: string[] | null, field: string): string | null {
  checkField(AllowlistSchema, list, field)
  if (list === null) return null
  list.forEach((p, i) => {
    if (!PATTERN.test(p)) throw new ApiError('BAD_REQUEST', { field: `${field}.${i}`, expected: EXPECTED })
  })
  return [...new Set(list)].join('\n')
}

export function decodeAllowlist(raw: string | null | undefined): string[] | null {
  if (raw === null || raw === undefined) return null
  return raw.split('\n').filter(Boolean)
}
