/**
 * Master-key rotation: every data key wrapped by the old master key is re-wrapped by the new one,
 * in one transaction (all rows move or none do). The provider keys are never decrypted. Rows
 * already under the new key are skipped, so an interrupted or repeated run is harmless. A row
 * under neither key, or one that fails authentication, aborts the run: it names the row so the
 * operator can delete it (DELETE /v1/keys/{provider}) and have the owner re-vault it.
 */
import { and, eq } from 'drizzle-orm'
import type { Database } from '../db/client'
import { vaultKeys } from '../db/schema'
import { ApiError } from '../errors'
import { rewrap, type MasterKey } from './crypto'

export interface RotationReport {
  rewrapped: number
  alreadyRotated: number
}

export class RotationError extends Error {}

export async function rotateMasterKey(db: Database, from: MasterKey, to: MasterKey): Promise<RotationReport> {
  if (from.id === to.id) throw new RotationError('the new master key is the old one')
  return db.transaction(async (tx) => {
    // FOR UPDATE: a key stored during the run waits, then is written under whichever key the
    // running service holds; it is picked up by the next (idempotent) run if that is the old one.
    const rows = await tx.select().from(vaultKeys).for('update')
    const strangers = rows.filter((r) => r.masterKeyId !== from.id && r.masterKeyId !== to.id)
    if (strangers.length > 0)
      throw new RotationError(
        `${strangers.length} row(s) are wrapped by neither master key (${strangers.map((r) => `${r.accountId}/${r.provider} under ${r.masterKeyId}`).join(', ')}); nothing was changed`,
      )
    let rewrapped = 0
    for (const r of rows) {
      if (r.masterKeyId === to.id) continue
      let next: ReturnType<typeof rewrap>
      try {
        next = rewrap(from, to, r, { accountId: r.accountId, provider: r.provider })
      } catch (e) {
        if (e instanceof ApiError) throw new RotationError(`${r.accountId}/${r.provider} fails authentication under the old master key; nothing was changed`)
        throw e
      }
      await tx
        .update(vaultKeys)
        .set(next)
        .where(and(eq(vaultKeys.accountId, r.accountId), eq(vaultKeys.provider, r.provider)))
      rewrapped++
    }
    return { rewrapped, alreadyRotated: rows.length - rewrapped }
  })
}
