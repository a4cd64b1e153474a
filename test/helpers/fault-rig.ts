/**
 * The setup every process-level fault test shares: a fake upstream, a fresh database (optionally
 * reached through a relay the test can cut), the API as a child process on its own key prefix, and
 * one cleanup that runs every step even when one fails. `ledger()` opens the stores the final
 * invariant checks read (always the database directly, never through the relay).
 */
import type { Services } from '../../src/services'
import { startFakeUpstream, type FakeUpstream } from '../fakes/upstream'
import { startTcpProxy, type TcpProxy } from '../fakes/tcp-proxy'
import { apiProcess, ledgerStores, type ApiProcess } from './api-process'
import { cleanupAll } from './cleanup'
import { createTestDatabase, deleteAppKeys } from './harness'

export interface FaultRig {
  fake: FakeUpstream
  db: Awaited<ReturnType<typeof createTestDatabase>>
  api: ApiProcess
  /** Present when the rig was asked for a Postgres relay. */
  relay: TcpProxy | null
  prefix: string
  ledger(): Promise<Services>
  close(): Promise<void>
}

export async function startFaultRig(o: {
  env?: Record<string, string>
  catalog?: (fakeUrl: string) => unknown
  /** Reach Postgres through a relay the test can cut and restore. */
  postgresRelay?: boolean
  /** Extra teardown, run with the rest. */
  also?: () => unknown
}): Promise<FaultRig> {
  const prefix = `fk${Math.random().toString(36).slice(2, 10)}`
  const fake = startFakeUpstream()
  const db = await createTestDatabase()
  const relay = o.postgresRelay ? await startTcpProxy('127.0.0.1', 5432) : null
  const databaseUrl = new URL(db.url)
  if (relay) databaseUrl.port = String(relay.port)
  const api = await apiProcess({ databaseUrl: databaseUrl.toString(), prefix, fakeUrl: fake.url, catalog: o.catalog, env: { FLUSH_INTERVAL_MS: '20', ...o.env } })
  await api.start()
  let stores: Services | null = null
  return {
    fake,
    db,
    api,
    relay,
    prefix,
    async ledger() {
      stores ??= await ledgerStores({ ...api.env, DATABASE_URL: db.url })
      return stores
    },
    close: () =>
      cleanupAll(
        () => api.dispose(),
        () => stores?.close(),
        () => deleteAppKeys({ REDIS_URL: api.env.REDIS_URL! }, prefix),
        () => relay?.close(),
        () => fake.stop(),
        o.also,
        () => db.drop(),
      ),
  }
}
