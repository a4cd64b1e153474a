/**
 * Outgoing mail (token-recovery links, auto-refill notices) through nodemailer: SMTP when SMTP_URL
 * is set, else each message is written as an `.eml` file under MAIL_DIR — readable by a developer,
 * and by tests. Files are private to the service user: they hold one-time links.
 * Sending runs in the background so that an answer never reveals, by its timing, whether a mail
 * was sent (POST /v1/token/rotate must not enumerate accounts).
 * errors: none thrown by send(); failures are logged (`mail_failed`).
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import nodemailer, { type Transporter } from 'nodemailer'
import { randomId } from '../auth/tokens'
import type { Log } from '../log'

export interface Mail {
  to: string
  subject: string
  text: string
}

export interface MailerOptions {
  smtpUrl?: string
  dir: string
  from: string
  log: Log
}

export class Mailer {
  private transport: Transporter
  private pending = new Set<Promise<void>>()

  constructor(private o: MailerOptions) {
    this.transport = o.smtpUrl
      ? nodemailer.createTransport(o.smtpUrl)
      : nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' })
  }

  /** Queues a message; returns at once. */
  send(mail: Mail): void {
    this.later(async () => mail)
  }

  /**
   * Prepares and sends a message in the background: `build` may do its own I/O and return null to
   * send nothing. The caller's answer takes the same time either way.
   */
  later(build: () => Promise<Mail | null>): void {
    const p: Promise<void> = build()
      .then((mail) => (mail ? this.deliver(mail) : undefined))
      .catch((e) => this.o.log.error('mail_failed', { error: e instanceof Error ? e.message : String(e) }))
      .finally(() => this.pending.delete(p))
    this.pending.add(p)
  }

  private async deliver(mail: Mail): Promise<void> {
    const info = await this.transport.sendMail({ from: this.o.from, ...mail })
    if (this.o.smtpUrl) return
    mkdirSync(this.o.dir, { recursive: true, mode: 0o700 })
    const name = `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomId(6)}.eml`
    writeFileSync(join(this.o.dir, name), (info as unknown as { message: Buffer }).message, { mode: 0o600 })
  }

  /** Resolves once every queued message is sent (shutdown, tests). */
  async idle(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending])
  }
}
