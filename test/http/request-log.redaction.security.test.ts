/**
 * What other log lines quote — an SMTP server's refusal, a driver's message — never puts an e-mail
 * address, a token or a one-time code in the log (src/log.ts redacts the whole line).
 */
import { afterAll, beforeAll, expect, spyOn, test } from 'bun:test'
import net from 'node:net'
import { ConfigError, parseConfig, withoutPassword } from '../../src/config'
import { redact } from '../../src/log'
import { startTestApp, type TestApp } from '../helpers/harness'

/** An SMTP server that refuses every recipient, quoting the address as Postfix does. */
function refusingSmtp(): Promise<{ port: number; close(): void }> {
  const server = net.createServer((sock) => {
    sock.write('220 fake ESMTP\r\n')
    let buf = ''
    sock.on('data', (d) => {
      buf += d.toString()
      let i: number
      while ((i = buf.indexOf('\r\n')) >= 0) {
        const line = buf.slice(0, i)
        buf = buf.slice(i + 2)
        const rcpt = /^RCPT TO:\s*<([^>]*)>/i.exec(line)
        if (/^(EHLO|HELO)/i.test(line)) sock.write('250 fake\r\n')
        else if (/^MAIL FROM/i.test(line)) sock.write('250 2.1.0 Ok\r\n')
        else if (rcpt) sock.write(`550 5.1.1 <${rcpt[1]}>: Recipient address rejected: User unknown\r\n`)
        else if (/^QUIT/i.test(line)) sock.end('221 Bye\r\n')
        else sock.write('250 Ok\r\n')
      }
    })
    sock.on('error', () => {})
  })
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok({ port: (server.address() as net.AddressInfo).port, close: () => server.close() })))
}

let t: TestApp
let smtp: { port: number; close(): void }
beforeAll(async () => {
  smtp = await refusingSmtp()
  t = await startTestApp({ env: { LOG: 'json', SMTP_URL: `smtp://127.0.0.1:${smtp.port}` } })
})
afterAll(async () => {
  await t.close()
  smtp.close()
})

test('an SMTP refusal that quotes the recipient logs mail_failed without the e-mail address', async () => {
  const email = `victim-${t.prefix}@example.com`
  const spy = spyOn(console, 'log').mockImplementation(() => {})
  let calls: unknown[][] = []
  try {
    await t.signup(email)
    expect((await t.req('POST', '/v1/token/rotate', { body: { email } })).status).toBe(202)
    await t.s.mailer.idle()
    calls = [...spy.mock.calls]
  } finally {
    spy.mockRestore()
  }
  const lines = calls.map((c) => JSON.parse(String(c[0])))
  const failed = lines.find((l) => l.msg === 'mail_failed')
  expect(failed).toBeDefined()
  expect(failed.error).toContain('Recipient address rejected')
  expect(JSON.stringify(calls)).not.toContain(email)
})

test('a refused setting is named on stderr, but a secret value or a URL password is never quoted', () => {
  let message = ''
  try {
    parseConfig({
      ADMIN_TOKEN: 'short-admin-sec',
      TELEGRAM_BOT_TOKEN: '12345:bot-token-with a space',
      TELEGRAM_WEBHOOK_SECRET: 'tg-secret!',
      DATABASE_URL: 'postgresql+asyncpg://pab:db-password-1@db.internal/pab',
      SMTP_URL: 'smtp+starttls://mailer:smtp-password-2@mail.internal',
    })
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError)
    message = (e as Error).message
  }
  for (const name of ['ADMIN_TOKEN', 'TELEGRAM_BOT_TOKEN', 'TELEGRAM_WEBHOOK_SECRET', 'DATABASE_URL', 'SMTP_URL']) expect(message).toContain(name)
  // The URL stays recognisable (the scheme is what is wrong), its password does not.
  expect(message).toContain('postgresql+asyncpg://pab:***@db.internal/pab')
  for (const secret of ['short-admin-sec', 'bot-token-with', 'tg-secret!', 'db-password-1', 'smtp-password-2']) expect(message).not.toContain(secret)
  expect(withoutPassword('redis://:redis-pass@10.0.0.5:6379')).toBe('redis://:***@10.0.0.5:6379')
})

test('the log redaction strips tokens, keys, codes and query parameters, and leaves ids and route templates', () => {
  const owner = 'sk_' + 'A'.repeat(43)
  const line = redact(
    JSON.stringify({
      error: `Failed query: select 1 where a = $1\nparams: ${owner},x`,
      path: '/vault/' + 'c'.repeat(43),
      url: 'http://pab.test/rotate?code=rot-code-1&x=1 /mandate?ref=mr_secretref',
      keys: ['ak_' + 'B'.repeat(43), 'whsec_' + 'C'.repeat(40), 'sk-proj-' + 'D'.repeat(40), 'rk_live_' + 'E'.repeat(30)],
      route: '/vault/:code',
      ids: 'acc_03_abc pk_03_' + 'F'.repeat(22) + ' call_xyz agt_' + 'G'.repeat(22),
    }),
  )
  for (const secret of [owner, 'c'.repeat(43), 'rot-code-1', 'mr_secretref', 'B'.repeat(43), 'C'.repeat(40), 'D'.repeat(40), 'E'.repeat(30)]) expect(line).not.toContain(secret)
  const out = JSON.parse(line)
  expect(out.route).toBe('/vault/:code')
  expect(out.ids).toBe('acc_03_abc pk_03_' + 'F'.repeat(22) + ' call_xyz agt_' + 'G'.repeat(22))
  expect(out.path).toBe('/vault/{code}')
  expect(out.error).toBe('Failed query: select 1 where a = $1\nparams: [redacted]')
})
