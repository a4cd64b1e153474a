/**
 * Founder review of dead letters (outbox entries Postgres refused): list, replay into the outbox
 * after the cause is fixed, discard after review.
 * errors: NOT_FOUND (no such dead letter: already replayed or discarded).
 */
import { ApiError } from '../../errors'
import { countDeadLetters, discardDeadLetter, listDeadLetters, replayDeadLetter } from '../../write-behind/dead-letters'
import type { Services } from '../../services'

export async function listDead(s: Services, limit: string | undefined) {
  const n = Math.min(1000, Math.max(1, Number(limit ?? 100)))
  const [dead_letters, count] = await Promise.all([listDeadLetters(s.ctx, n), countDeadLetters(s.ctx)])
  return { dead_letters, count }
}

export async function replayDead(s: Services, id: string) {
  const outboxId = await replayDeadLetter(s.ctx, id)
  if (outboxId === null) throw new ApiError('NOT_FOUND', { resource: 'dead letter' })
  return { id, state: 'requeued' as const, outbox_id: outboxId }
}

export async function discardDead(s: Services, id: string) {
  if (!(await discardDeadLetter(s.ctx, id))) throw new ApiError('NOT_FOUND', { resource: 'dead letter' })
  return { id, state: 'discarded' as const }
}
