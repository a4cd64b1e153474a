/**
 * GET /status is public: a degraded reason says what is wrong and what clears it, never an account
 * id or a database error's text (the log line, for the operator, has the details).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import postgres from 'postgres'
import { deleteAppKeys, startTestApp, type TestApp } from '../helpers/harness'
import { drain } from '../helpers/invariants'

let t: TestApp
beforeAll(async () => {
  t = await startTestApp({ env: { LEDGER_CHECK_MS: '100' } })
})
afterAll(async () => {
  await t?.close()
})

test('a failed ledger rebuild shows on /status without the account id or the failed query', async () => {
  const a = await t.signup()
  await drain(t.s.flusher)
  const pg = postgres(t.db.url, { max: 1, onnotice: () => {} })
  try {
    // Redis comes back empty, and Postgres refuses what the rebuild reads for each account.
    await pg.unsafe('ALTER TABLE account_policies RENAME TO account_policies_away')
    await deleteAppKeys(t.s.cfg, t.prefix)
    t.s.ledger.start()
    let reasons: { reason: string; detail: string }[] = []
    for (let i = 0; i < 100 && !reasons.some((r) => r.reason === 'ledger_rebuild_failed'); i++) {
      await Bun.sleep(50)
      reasons = (await t.req('GET', '/status')).body.degraded
    }
    const failed = reasons.find((r) => r.reason === 'ledger_rebuild_failed')
    expect(failed).toBeDefined()
    const text = JSON.stringify(reasons)
    for (const leak of [a.account_id, 'Failed query', 'params', 'account_policies']) expect(text).not.toContain(leak)
  } finally {
    await t.s.ledger.stop()
    await pg.unsafe('ALTER TABLE account_policies_away RENAME TO account_policies').catch(() => {})
    await pg.end()
  }
})
