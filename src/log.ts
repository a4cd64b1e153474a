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
