/** Structured JSON log lines on stdout. Never payloads, never keys or tokens. */
export class Log {
  constructor(private mode: 'json' | 'silent') {}
  private line(level: string, msg: string, fields: Record<string, unknown>): void {
    if (this.mode === 'silent') return
    console.log(JSON.stringify({ t: new Date().toISOString(), level, msg, ...fields }))
  }
  info(msg: string, fields: Record<string, unknown> = {}): void {
    this.line('info', msg, fields)
  }
  warn(msg: string, fields: Record<string, unknown> = {}): void {
    this.line('warn', msg, fields)
  }
  error(msg: string, fields: Record<string, unknown> = {}): void {
    this.line('error', msg, fields)
  }
}

const SQLSTATE = /^[0-9A-Z]{5}$/

/**
 * An error as log fields. A database error gives its SQLSTATE and the database's own message, never
 * the statement's parameters: drizzle's message quotes every one of them (a user's text, an account
 * id, a token hash) after the statement.
 */
export function errorFields(e: unknown): Record<string, unknown> {
  if (!(e instanceof Error)) return { error: String(e) }
  const db = [e.cause, e].find((x): x is Error & { code: string } => {
    const code = x instanceof Error ? (x as { code?: unknown }).code : undefined
    return typeof code === 'string' && SQLSTATE.test(code)
  })
  if (db) return { error: e.name, db_code: db.code, db_message: db.message }
  if (e.message.startsWith('Failed query:')) return { error: e.name, cause: e.cause instanceof Error ? e.cause.message : 'database error' }
  return { error: `${e.name}: ${e.message}` }
}
