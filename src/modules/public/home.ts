/**
 * `GET /`: a browser that opens the bare host is pointed at the console and the documents an agent
 * reads; a program asking for JSON gets the same links as data.
 */
import { esc, htmlPage } from '../../pages/html'

const LINKS = [
  ['console', '/console', 'Owner console: sign in with your owner token'],
  ['llms_full', '/llms-full.txt', 'Every route, price and SDK base URL, written for an LLM agent'],
  ['openapi', '/openapi.json', 'The OpenAPI 3 document'],
  ['errors', '/errors.md', 'Every error code and what unblocks it'],
  ['status', '/status', 'Service status'],
] as const

export function homeAnswer(request: Request, baseUrl: string): Response {
  if (!(request.headers.get('accept') ?? '').includes('text/html')) {
    const links = Object.fromEntries(LINKS.map(([key, path]) => [key, baseUrl + path]))
    return Response.json({ name: 'Prepaid API balance for AI agents', signup: `POST ${baseUrl}/v1/signup`, links })
  }
  const items = LINKS.map(([, path, what]) => `<li><a href="${esc(path)}">${esc(path)}</a> — ${esc(what)}</li>`).join('')
  const main = `<h1>Prepaid API balance for AI agents</h1>
<p>A prepaid, capped, auditable balance that AI agents spend on third-party APIs. An agent signs up with
<code>POST /v1/signup</code> and gets a token and 500 free credits.</p><ul>${items}</ul>`
  return htmlPage(200, 'Prepaid API balance', main)
}
