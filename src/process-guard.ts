/**
 * The one uncaught exception the process survives: the `postgres` driver (3.4.x) on Bun may run a
 * write it had scheduled with setImmediate after its socket closed (`socket.write` on null), from
 * a timer, where nothing can catch it. Without this guard a Postgres restart or network cut can
 * kill the API process mid-traffic (test/faults/postgres-outage.test.ts caught it); the connection
 * is gone either way and the driver reports it to its queries, so carrying on is safe.
 * Any other uncaught exception is logged and ends the process, as it would without a handler.
 */
import type { Log } from './log'

export function isPostgresWriteAfterClose(e: unknown): boolean {
  return e instanceof TypeError && /socket\.write/.test(e.message) && /postgres[\\/]src[\\/]connection\.js/.test(e.stack ?? '')
}

export function installProcessGuard(log: Log): void {
  process.on('uncaughtException', (e) => {
    if (isPostgresWriteAfterClose(e)) {
      log.warn('postgres_write_after_close', { error: e.message })
      return
    }
    log.error('uncaught_exception', { error: e instanceof Error ? (e.stack ?? e.message) : String(e) })
    process.exit(1)
  })
}
