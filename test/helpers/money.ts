/**
 * Helpers of the money-in tests: form posts (the pages are HTML forms), the consent flow, the
 * mails the service wrote as .eml files, and the ledger rows of top-ups.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { and, eq } from 'drizzle-orm'
import { ledgerEntries } from '../../src/db/schema'
import { readResponse, type TestApp, type TestResponse } from './harness'

export const GOOD_CARD = '4242424242424242'

/** Path and query of an absolute link the service handed out (BASE_URL is http://pab.test). */
export function pathOf(url: string): string {
  const u = new URL(url)
  return u.pathname + u.search
}

export async function postForm(t: TestApp, path: string, fields: Record<string, string | number>, headers: Record<string, string> = {}): Promise<TestResponse> {
  const body = new URLSearchParams(Object.entries(fields).map(([k, v]): [string, string] => [k, String(v)])).toString()
  const res = await t.app.handle(
    new Request(`http://pab.test${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body }),
  )
  return readResponse(res)
}

export async function get(t: TestApp, path: string, headers: Record<string, string> = {}): Promise<TestResponse> {
  const res = await t.app.handle(new Request(`http://pab.test${path}`, { headers }))
  return readResponse(res)
}

/** The account's consent page path (/mandate?ref=...), from GET /v1/mandate. */
export async function consentPath(t: TestApp, token: string): Promise<string> {
  const m = await t.req('GET', '/v1/mandate', { token })
  if (m.status !== 200) throw new Error(`GET /v1/mandate: ${m.status} ${m.text}`)
  return pathOf(m.body.enable_url)
}

/** The operator sets the limits (the consent page only shows them). */
export async function setLimits(t: TestApp, token: string, limits: { threshold: number; refill: number; ceiling: number }): Promise<void> {
  const r = await t.req('PUT', '/v1/mandate', { token, body: limits })
  if (r.status !== 200) throw new Error(`PUT /v1/mandate: ${r.status} ${r.text}`)
}

/** Sandbox consent with the test card: the operator's limits, then auto-refill on. */
export async function consentSandbox(t: TestApp, token: string, limits: { threshold: number; refill: number; ceiling: number }): Promise<void> {
  await setLimits(t, token, limits)
  const r = await postForm(t, await consentPath(t, token), { card: GOOD_CARD })
  if (r.status !== 200) throw new Error(`consent: ${r.status} ${r.text.slice(0, 300)}`)
}

export interface ReadMail {
  to: string
  subject: string
  text: string
}

function decodeQuotedPrintable(s: string): string {
  return s.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)))
}

/** Every mail written to the test's MAIL_DIR, oldest first. */
export function readMails(t: TestApp): ReadMail[] {
  const dir = t.s.cfg.MAIL_DIR
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .filter((f) => f.endsWith('.eml'))
    .sort()
    .map((f) => {
      const raw = readFileSync(join(dir, f), 'utf8')
      const split = raw.indexOf('\n\n')
      const head = raw.slice(0, split)
      const header = (name: string) => new RegExp(`^${name}: (.*)$`, 'mi').exec(head)?.[1]?.trim() ?? ''
      let text = raw.slice(split + 2)
      if (/quoted-printable/i.test(header('Content-Transfer-Encoding'))) text = decodeQuotedPrintable(text)
      if (/base64/i.test(header('Content-Transfer-Encoding'))) text = Buffer.from(text, 'base64').toString('utf8')
      return { to: header('To'), subject: header('Subject'), text }
    })
}

/** The top-up rows Postgres holds for an account (after a flush). */
export async function topupRows(t: TestApp, acct: string) {
  return t.s.db.db
    .select()
    .from(ledgerEntries)
    .where(and(eq(ledgerEntries.accountId, acct), eq(ledgerEntries.kind, 'topup')))
}
