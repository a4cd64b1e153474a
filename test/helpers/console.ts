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
