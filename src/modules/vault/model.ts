import { Type as T } from '@sinclair/typebox'

export const KeyLinkBody = T.Object({
  provider: T.String({ minLength: 1, maxLength: 64, description: 'A provider id of the catalog (GET /capabilities)' }),
})

export const KeyLinkResponse = T.Object({
  url: T.String({ description: 'One-time page for the key owner: {BASE_URL}/vault/{code}. Relay it; it works once, for 10 minutes.' }),
  provider: T.String(),
  expires_at: T.String({ description: 'ISO 8601' }),
})

export const KeySummary = T.Object({
  provider: T.String(),
  last4: T.String({ description: 'The last 4 characters of the key; the key itself is never returned' }),
  created_at: T.String({ description: 'ISO 8601' }),
})

export const KeysResponse = T.Object({ keys: T.Array(KeySummary) })

export const ProviderParams = T.Object({ provider: T.String({ minLength: 1, maxLength: 64 }) })

export const CodeParams = T.Object({ code: T.String({ description: 'The code of a vault link' }) })
