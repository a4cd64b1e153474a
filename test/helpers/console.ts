/**
 * The owner console as a client without a browser sees it: a cookie jar, the sign-in form, the
 * CSRF token read from a page, form posts. Everything goes through app.handle.
 */
import { readResponse, type TestApp, type TestResponse } from './harness'

export class ConsoleClient {
  readonly jar = new Map<string, string>()
  constructor(private t: TestApp) {}

  private store(res: Response): void {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';')
      const eq = pair!.indexOf('=')
      const name = pair!.slice(0, eq)
      const value = pair!.slice(eq + 1)
      if (/max-age=0/i.test(c) || value === '') this.jar.delete(name)
      else this.jar.set(name, value)
    }
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    const cookie = [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ')
    return { ...(cookie ? { cookie } : {}), ...extra }
  }

  async get(path: string): Promise<TestResponse> {
    const res = await this.t.app.handle(new Request(`http://pab.test${path}`, { headers: this.headers() }))
    this.store(res)
    return readResponse(res)
  }

  async post(path: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<TestResponse> {
    const res = await this.t.app.handle(
      new Request(`http://pab.test${path}`, {
        method: 'POST',
        headers: this.headers({ 'content-type': 'application/x-www-form-urlencoded', ...headers }),
        body: new URLSearchParams(fields).toString(),
      }),
    )
    this.store(res)
    return readResponse(res)
  }

  /** Posts a page's form with the CSRF token that page carries. */
  async submit(page: string, action: string, fields: Record<string, string>): Promise<TestResponse> {
    const csrf = csrfOf((await this.get(page)).text)
    return this.post(action, { csrf, ...fields })
  }

  /** GET the sign-in page (its CSRF cookie and field), then post the token. */
  async signIn(token: string, headers: Record<string, string> = {}): Promise<TestResponse> {
    const page = await this.get('/console/sign-in')
    return this.post('/console/sign-in', { csrf: csrfOf(page.text), token }, headers)
  }
}

export function csrfOf(html: string): string {
  const m = /name="csrf" value="([^"]+)"/.exec(html)
  if (!m) throw new Error('no CSRF field on the page')
  return m[1]!
}

/**
 * The fields a browser submits for the form of a page that holds `marker`, as rendered: inputs with
 * their values, checkboxes only when checked, textareas with their text.
 */
export function formOf(html: string, marker: string): Record<string, string> {
  const at = html.indexOf(marker)
  if (at < 0) throw new Error(`no ${marker} on the page`)
  const start = html.lastIndexOf('<form', at)
  const form = html.slice(start, html.indexOf('</form>', at))
  const unesc = (s: string) => s.replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)))
  const attr = (tag: string, name: string) => new RegExp(`\\s${name}(?:="([^"]*)")?[\\s>]`).exec(tag)
  const out: Record<string, string> = {}
  for (const [tag] of form.matchAll(/<input\b[^>]*>/g)) {
    const name = attr(tag, 'name')?.[1]
    if (!name) continue
    if (attr(tag, 'type')?.[1] === 'checkbox' && !attr(tag, 'checked')) continue
    out[unesc(name)] = unesc(attr(tag, 'value')?.[1] ?? (attr(tag, 'type')?.[1] === 'checkbox' ? 'on' : ''))
  }
  for (const m of form.matchAll(/<textarea\b([^>]*)>([^<]*)<\/textarea>/g)) {
    const name = attr(m[1]! + '>', 'name')?.[1]
    if (name) out[unesc(name)] = unesc(m[2]!)
  }
  return out
}

/** The console's 30-day chart as its bars: HKT day → credits (a day without a bar spent nothing). */
export function chartBars(html: string): Record<string, number> {
  const out: Record<string, number> = {}
  for (const m of html.matchAll(/<title>(\d{4}-\d{2}-\d{2}): ([\d,]+) credits<\/title>/g)) out[m[1]!] = Number(m[2]!.replace(/,/g, ''))
  return out
}
