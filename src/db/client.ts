/**
 * Postgres through drizzle: the `postgres` driver when DATABASE_URL is set, else an embedded
 * PGlite under PGLITE_DIR (so the service starts with no database server). Migrations run at
 * start-up through a single-connection client.
 */
import { join } from 'node:path'
import { mkdirSync } from 'node:fs'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import postgres from 'postgres'
import * as schema from './schema'

export type Schema = typeof schema
export type Database = PgDatabase<PgQueryResultHKT, Schema>

export interface DbHandle {
  db: Database
  close(): Promise<void>
}

export const MIGRATIONS_DIR = join(import.meta.dir, '..', '..', 'drizzle')

export async function openDatabase(cfg: { DATABASE_URL?: string; PGLITE_DIR: string }): Promise<DbHandle> {
  if (cfg.DATABASE_URL) {
    const migrator = postgres(cfg.DATABASE_URL, { max: 1, onnotice: () => {} })
    try {
      await migratePostgres(drizzlePostgres(migrator), { migrationsFolder: MIGRATIONS_DIR })
    } finally {
      await migrator.end()
    }
    return connectPostgres(cfg.DATABASE_URL)
  }
  const { PGlite } = await import('@electric-sql/pglite')
  const { drizzle: drizzlePglite } = await import('drizzle-orm/pglite')
  const { migrate: migratePglite } = await import('drizzle-orm/pglite/migrator')
  mkdirSync(cfg.PGLITE_DIR, { recursive: true })
  const client = new PGlite(cfg.PGLITE_DIR)
  const db = drizzlePglite(client, { schema, casing: 'snake_case' })
  await migratePglite(db, { migrationsFolder: MIGRATIONS_DIR })
  return { db: db as unknown as Database, close: () => client.close() }
}

/** A pool without migrating (the flusher of a test pointed at a dead server uses this). */
export function connectPostgres(url: string, max = 10): DbHandle {
  const sql = postgres(url, { max, onnotice: () => {}, connect_timeout: 5 })
  return { db: drizzlePostgres(sql, { schema, casing: 'snake_case' }) as unknown as Database, close: () => sql.end({ timeout: 5 }) }
}
