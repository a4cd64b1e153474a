import { Type as T } from '@sinclair/typebox'

// Checked by ledger/statement.ts so that a refusal names the field and the accepted forms.
export const LedgerQuery = T.Object({
  from: T.Optional(T.String({ maxLength: 40, description: 'Inclusive: YYYY-MM-DD (00:00 UTC) or an ISO 8601 date-time with a zone; default: the beginning' })),
  to: T.Optional(T.String({ maxLength: 40, description: 'Exclusive, same forms; default: now' })),
  format: T.Optional(T.String({ maxLength: 10, description: 'jsonl (default) or csv' })),
})
