/**
 * The console's page shell: the nav every page links by name (docs/api.md §9), the sign-out form, the
 * one stylesheet, and the headers of every console answer (a CSP with no script at all, no framing).
 */
import { esc } from '../../../pages/html'

export const CONSOLE_CSP = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

export const CONSOLE_HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': CONSOLE_CSP,
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'x-robots-tag': 'noindex',
}

export const NAV = [
  ['Overview', '/console'],
  ['Agents', '/console/agents'],
  ['Policies', '/console/policies'],
  ['Activity', '/console/activity'],
  ['Money', '/console/money'],
  ['Keys', '/console/keys'],
  ['Proposals', '/console/proposals'],
  ['Webhooks', '/console/webhooks'],
] as const

export type PageName = (typeof NAV)[number][0]

/** Mints a form's one-time token (auth/console-session.ts formTokens): one call per rendered form. */
export type FormToken = () => string

/** A hidden CSRF field: every console form carries one, with a token of its own that acts once. */
export const csrfField = (csrf: FormToken) => `<input type="hidden" name="csrf" value="${esc(csrf())}">`

/** A one-button POST form (the console's actions work without JavaScript). */
export function actionButton(action: string, csrf: FormToken, label: string, cls = '', hidden: Record<string, string> = {}): string {
  const extra = Object.entries(hidden).map(([k, v]) => `<input type="hidden" name="${esc(k)}" value="${esc(v)}">`).join('')
  return `<form class="inline" method="post" action="${esc(action)}">${csrfField(csrf)}${extra}<button type="submit"${cls ? ` class="${cls}"` : ''}>${esc(label)}</button></form>`
}

export interface Flash {
  ok?: string
  error?: string
}

export function flashOf(f: Flash | undefined): string {
  if (!f) return ''
  if (f.error) return `<p class="notice error" role="alert">${esc(f.error)}</p>`
  if (f.ok) return `<p class="notice" role="status">${esc(f.ok)}</p>`
  return ''
}

function doc(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${esc(title)} · Owner console</title>
<link rel="stylesheet" href="/console/console.css">
</head><body>
${body}
</body></html>`
}

export function consolePage(current: PageName, csrf: FormToken, main: string, opt: { status?: number; flash?: Flash } = {}): Response {
  const nav = NAV.map(([name, href]) => `<li><a href="${href}"${name === current ? ' aria-current="page"' : ''}>${name}</a></li>`).join('')
  const body = `<header><span class="brand">Owner console</span>
<form class="signout" method="post" action="/console/sign-out">${csrfField(csrf)}<button type="submit" class="link">Sign out</button></form>
<nav aria-label="Console"><ul>${nav}</ul></nav></header>
<main>
<h1>${esc(current)}</h1>
${flashOf(opt.flash)}
${main}
</main>`
  return new Response(doc(current, body), { status: opt.status ?? 200, headers: CONSOLE_HEADERS })
}

/** A page outside the signed-in shell (sign-in, errors). */
export function barePage(title: string, main: string, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(doc(title, `<main>${main}</main>`), { status, headers: { ...CONSOLE_HEADERS, ...headers } })
}
