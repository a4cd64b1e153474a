import { Type as T } from '@sinclair/typebox'

export const DeadLetterItem = T.Object({
  id: T.String({ description: 'dl_<shard>_<stream id>' }),
  shard: T.Integer(),
  kind: T.String({ description: 'The outbox entry kind: account, debit, call, event, …' }),
  error: T.String({ description: 'SQLSTATE and message of the refusal' }),
  entry: T.Record(T.String(), T.String(), { description: 'The entry fields as the Lua script wrote them' }),
  at: T.String({ description: 'When it was dead-lettered' }),
  source_id: T.String({ description: 'Its stream id in the outbox it left' }),
})

export const DeadLetterList = T.Object({ dead_letters: T.Array(DeadLetterItem), count: T.Integer({ description: 'All dead letters now (the list may be shorter)' }) })

export const DeadLetterQuery = T.Object({ limit: T.Optional(T.String({ pattern: '^[0-9]{1,4}$', description: 'How many, oldest first: 1..1000 (default 100)' })) })

export const DeadLetterParams = T.Object({ id: T.String({ pattern: '^dl_\\d{2}_\\d{1,20}-\\d{1,20}$' }) })

export const DeadLetterReplayed = T.Object({ id: T.String(), state: T.Literal('requeued'), outbox_id: T.String() })
export const DeadLetterDiscarded = T.Object({ id: T.String(), state: T.Literal('discarded') })
