/**
 * The owner console (docs/api.md §9): server-rendered pages under /console, signed in with the owner
 * token (auth/console-session.ts), one stylesheet, no script. Every action calls the service the REST
 * route calls (governance, account views, mandate, vault, webhook endpoints, operator chat); a POST
 * answers with the page it acted on, so a token or secret shown once never passes through a URL.
 * Each rendered form carries a one-time token of its own (auth/console-session.ts): posted twice, it acts once.
 * errors (as pages): UNAUTHORIZED / FORBIDDEN (sign-in), FORBIDDEN (a form without its CSRF token),
 *         CONFLICT 409 (a form posted again), RATE_LIMITED (sign-in, per IP), and whatever the
 *         called service refuses (shown on the page).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Elysia } from 'elysia'
import { ApiError } from '../../errors'
import { http, type Http } from '../../http'
import { randomId } from '../../auth/tokens'
import { errorFields } from '../../log'
import { noteError } from '../../observe'
import { readText } from '../../edge/body'
import { checkText } from '../../edge/text'
import { esc, redirect } from '../../pages/html'
import type { Services } from '../../services'
import {
  claimFormToken,
  closeSession,
  cookieOf,
  csrfMatches,
  formNonce,
  formTokens,
  expiredCookie,
  newSigninToken,
  openSession,
  readSession,
  sessionCookie,
  SESSION_COOKIE,
  SIGNIN_COOKIE,
  signinCookie,
  type ConsoleSession,
} from '../../auth/console-session'
import { activityOf, balanceOf } from '../../account/views'
import { spendHistory } from '../../account/spend-history'
import { changeAgentState, readAgents, type AgentAction } from '../../governance/agents'
import { createAgentFor } from '../../governance/create-agent'
import { policiesOf, putPolicies } from '../../governance/policy-views'
import { getMandate, topup, updateMandate } from '../../mandate/mandate'
import { openVault, requestLink } from '../../vault/account-keys'
import { deleteWebhook, getWebhook, putWebhook } from '../../events/webhook-endpoints'
import { operatorLink } from '../../telegram/operator'
import { approveProposal, declineProposal, listProposals } from '../../proposals/proposals'
import { proposalDeps } from '../../proposals/deps'
import { statementFormat, statementHeaders, statementLag, statementRange, statementStream } from '../../ledger/statement'
import { barePage, consolePage, CONSOLE_HEADERS, type Flash, type PageName } from './pages/layout'
import { safeNext, signinPage } from './pages/signin'
import { overviewMain } from './pages/overview'
import { agentsMain } from './pages/agents'
import { ALLOW_ALL_FIELD, ALLOW_ALL_LABEL, CAP_SHOWN_FIELD, policiesMain, SHOWN_FIELD, shownAllowlist, shownThresholds, THRESHOLDS_FIELD, THRESHOLDS_SHOWN_FIELD } from './pages/policies'
import { runsSection } from './pages/runs'
import { listRuns } from '../../ledger/runs'
import { activityMain } from './pages/activity'
import { moneyMain } from './pages/money'
import { keysMain } from './pages/keys'
import { webhooksMain } from './pages/webhooks'
import { proposalsMain } from './pages/proposals'

const CSS = readFileSync(join(import.meta.dir, 'console.css'))

/** Form fields that may span lines (textareas); browsers send their line breaks as CRLF. */
const MULTILINE = new Set(['allowlist'])

type Form = Record<string, string>

/** What a form posted a second time is told (409, on the page it belongs to, as it stands now). */
const ALREADY_SUBMITTED =
  'Already submitted: this form was sent before and a form acts only once, so nothing was done again. The page below shows where things stand now; anything the first answer showed once (a new agent’s token, a signing secret, a link) is not shown again. Use the forms below to act again.'

const optInt = (form: Form, field: string): number | null => {
  const raw = (form[field] ?? '').trim()
  if (raw === '') return null
  if (!/^\d{1,15}$/.test(raw)) throw new ApiError('BAD_REQUEST', { field, expected: 'a whole number of credits, or empty' })
  return Number(raw)
}
const patterns = (raw: string | undefined): string[] => (raw ?? '').split('\n').map((l) => l.trim()).filter(Boolean)
/** The create-agent form: an empty box is no allowlist of its own (everything the account allows). */
const lines = (raw: string | undefined): string[] | null => {
  const list = patterns(raw)
  return list.length ? list : null
}
/**
 * The allowlist a Policies form asks for, as a patch: `{}` leaves it as it is. The "No allowlist" box
 * is null (allow everything); unticked, the patterns are the list and none is `[]` (allow nothing),
 * so an empty box never widens to null. A form that sends back the state its page showed changes
 * nothing: saving a cap keeps the allowlist, even one changed through the API since the page loaded.
 */
function allowlistEdit(form: Form): { allowlist?: string[] | null } {
  if (form.allowlist === undefined && form[ALLOW_ALL_FIELD] === undefined) return {}
  const list = patterns(form.allowlist)
  const allowAll = form[ALLOW_ALL_FIELD] !== undefined
  if (allowAll && list.length) throw new ApiError('BAD_REQUEST', { field: 'allowlist', expected: `empty when "${ALLOW_ALL_LABEL}" is ticked (untick it to allow only the patterns)` })
  const wanted = allowAll ? null : list
  return form[SHOWN_FIELD] === shownAllowlist(wanted) ? {} : { allowlist: wanted }
}

/**
 * The warning levels a Policies form asks for, as a patch: `{}` when the box still says what the
 * page showed. Each entry must be a whole number; the bounds are PUT /v1/policies' own.
 */
function thresholdsEdit(form: Form): { thresholds?: number[] } {
  const text = form[THRESHOLDS_FIELD]
  if (text === undefined) return {}
  const parts = text.split(',').map((x) => x.trim()).filter(Boolean)
  const bad = parts.find((x) => !/^\d{1,3}$/.test(x))
  if (bad !== undefined) throw new ApiError('BAD_REQUEST', { field: 'thresholds', expected: 'percentages 1..100 separated by commas (empty = off)' })
  const levels = parts.map(Number)
  return form[THRESHOLDS_SHOWN_FIELD] === shownThresholds(levels) ? {} : { thresholds: levels }
}

/**
 * The daily cap of a policy form: left out when the form carries back the value it showed
 * (CAP_SHOWN_FIELD) unchanged, so saving another field never makes a temporary raise of the cap
 * lasting (docs/api.md §13b). A form without it sends the cap as before.
 */
function capEdit(form: Form): { daily_cap?: number | null } {
  const cap = optInt(form, 'daily_cap')
  const shown = form[CAP_SHOWN_FIELD]
  if (shown !== undefined && (shown === '' ? null : Number(shown)) === cap) return {}
  return { daily_cap: cap }
}

/** A console error: its code and message, and the way back (also the app's, for a refusal before the handler). */
export function consoleErrorPage(err: ApiError): Response {
  return barePage(err.code, `<h1 class="error"><code>${esc(err.code)}</code></h1><p>${esc(String(err.body().message))}</p><p><a href="/console">Back to the console</a></p>`, err.status, err.headers)
}

export const consoleRoutes = (s: Services, h: Http = http(s)) => {
  const cookie = { secure: s.cfg.BASE_URL.startsWith('https:') }
  const vault = openVault(s)
  const proposals = proposalDeps(s)

  async function readConsoleForm(request: Request): Promise<Form> {
    const text = await readText(request, s.cfg.MAX_BODY_BYTES)
    const out: Form = {}
    for (const [k, v] of new URLSearchParams(text)) out[k] = MULTILINE.has(k) ? v.replace(/\r\n?/g, '\n') : v
    checkText(out, MULTILINE)
    return out
  }

  /** An unexpected failure is logged with a request id and shown as INTERNAL; an ApiError as itself. */
  function failurePage(request: Request, e: unknown): Response {
    let err: ApiError
    if (e instanceof ApiError) err = e
    else {
      const requestId = randomId(8)
      s.log.error('unhandled', { request_id: requestId, path: new URL(request.url).pathname, ...errorFields(e) })
      err = new ApiError('INTERNAL', { request_id: requestId })
    }
    noteError(request, err)
    return consoleErrorPage(err)
  }

  const errorFlash = (e: unknown): { flash: Flash; status: number } | null =>
    e instanceof ApiError && e.status < 500 ? { flash: { error: `${e.code}: ${String(e.body().message)}` }, status: e.status } : null

  // ---- pages ----
  const agentNames = async (acct: string) => new Map((await readAgents(s.ctx, acct)).map((a) => [a.id, a.name]))

  const pages: Record<PageName, (sess: ConsoleSession, url: URL, flash?: Flash, status?: number, extra?: Record<string, unknown>) => Promise<Response>> = {
    async Overview(sess, _url, flash, status) {
      const [bal, history, names, lag] = await Promise.all([
        balanceOf(s, sess.accountId),
        spendHistory(s.db.db, sess.accountId, s.ctx.clock.now()),
        agentNames(sess.accountId),
        statementLag(s.ctx, sess.accountId),
      ])
      return consolePage('Overview', formTokens(sess), overviewMain({ ...bal, history, agentNames: names, ledgerLag: lag }), { flash, status })
    },
    async Agents(sess, _url, flash, status, extra) {
      const created = extra?.created as { name: string; token: string } | undefined
      const [agents, runs] = await Promise.all([readAgents(s.ctx, sess.accountId), listRuns(s.ctx, { accountId: sess.accountId, agentId: null })])
      return consolePage('Agents', formTokens(sess), agentsMain(agents, formTokens(sess), created, runsSection(runs, agents)), { flash, status })
    },
    async Policies(sess, _url, flash, status) {
      const [p, agents] = await Promise.all([policiesOf(s.ctx, { accountId: sess.accountId, agentId: null }), readAgents(s.ctx, sess.accountId)])
      return consolePage('Policies', formTokens(sess), policiesMain(p, agents, formTokens(sess)), { flash, status })
    },
    async Activity(sess, url) {
      const q = url.searchParams
      const filter = { agent: q.get('agent') || undefined, route: q.get('route') || undefined, outcome: q.get('outcome') || undefined }
      const [page, agents] = await Promise.all([
        activityOf(s, sess.accountId, '50', q.get('cursor') || undefined, { agent: filter.agent, slug: filter.route, outcome: filter.outcome }),
        readAgents(s.ctx, sess.accountId),
      ])
      return consolePage('Activity', formTokens(sess), activityMain({ calls: page.calls, next_cursor: page.next_cursor, filter, agents }))
    },
    async Money(sess, _url, flash, status) {
      const [bal, mandate] = await Promise.all([balanceOf(s, sess.accountId), getMandate(s, sess.accountId)])
      return consolePage('Money', formTokens(sess), moneyMain({ balance: bal.balance, mandate, buyCreditsUrl: bal.links.buy_credits }, formTokens(sess)), { flash, status })
    },
    async Keys(sess, _url, flash, status, extra) {
      const keys = vault.configured ? await vault.list(sess.accountId) : []
      const link = extra?.link as { url: string; provider: string; expires_at: string } | undefined
      return consolePage('Keys', formTokens(sess), keysMain({ configured: vault.configured, keys, providers: [...s.catalog.providers.keys()], link }, formTokens(sess)), { flash, status })
    },
    async Proposals(sess, _url, flash, status) {
      const [pending, agents] = await Promise.all([listProposals(proposals, { accountId: sess.accountId, agentId: null }, 'pending'), readAgents(s.ctx, sess.accountId)])
      return consolePage('Proposals', formTokens(sess), proposalsMain(pending, agents, formTokens(sess)), { flash, status })
    },
    async Webhooks(sess, _url, flash, status, extra) {
      const endpoint = await getWebhook(s, sess.accountId).catch((e) => {
        if (e instanceof ApiError && e.code === 'NOT_FOUND') return null
        throw e
      })
      const configured = Boolean(s.bot && s.cfg.TELEGRAM_WEBHOOK_SECRET)
      const chatLink = extra?.chatLink as { command: string; expires_at: string } | undefined
      return consolePage('Webhooks', formTokens(sess), webhooksMain({ endpoint, secret: extra?.secret as string | undefined, chat: { configured, link: chatLink } }, formTokens(sess)), { flash, status })
    },
  }

  /** A signed-in GET page; no session → the sign-in page. */
  const view = (name: PageName) => async ({ request }: { request: Request }) => {
    try {
      const sess = await readSession(s.ctx, cookieOf(request, SESSION_COOKIE))
      if (!sess) return redirect('/console/sign-in')
      return await pages[name](sess, new URL(request.url))
    } catch (e) {
      return failurePage(request, e)
    }
  }

  /**
   * A signed-in form action: the session, then the form's one-time token (this session's, else
   * FORBIDDEN as any CSRF failure), claimed before the service call, then the call. The answer is
   * the page it belongs to, with the outcome (or the service's refusal) on it.
   */
  const act =
    (page: PageName, run: (sess: ConsoleSession, form: Form, params: Record<string, string>) => Promise<{ ok?: string; extra?: Record<string, unknown> }>) =>
    async ({ request, params }: { request: Request; params: Record<string, string> }) => {
      try {
        const sess = await readSession(s.ctx, cookieOf(request, SESSION_COOKIE))
        if (!sess) return redirect('/console/sign-in')
        const form = await readConsoleForm(request)
        const nonce = formNonce(sess, form.csrf)
        if (!nonce) throw new ApiError('FORBIDDEN', { role: 'console form that carries its own CSRF token: reload the page and submit again' })
        const url = new URL(request.url)
        if (!(await claimFormToken(s.ctx, sess, nonce))) {
          // The same rendered form again (a double click, a resend after reload or Back): nothing is
          // done twice. A 409 with the page as it stands now, not a redirect to the first answer: in a
          // payments console the owner must see that this click did nothing, and where things stand
          // (the agent created once, the top-up charged once); the first answer may have shown a
          // secret once (an agent token, a signing secret), which is never kept to be shown again.
          noteError(request, 'CONFLICT')
          return await pages[page](sess, url, { error: ALREADY_SUBMITTED }, 409)
        }
        try {
          const done = await run(sess, form, params ?? {})
          return await pages[page](sess, url, { ok: done.ok }, 200, done.extra)
        } catch (e) {
          const shown = errorFlash(e)
          if (!shown) throw e
          noteError(request, e as ApiError)
          return await pages[page](sess, url, shown.flash, shown.status)
        }
      } catch (e) {
        return failurePage(request, e)
      }
    }

  const agentMove = (action: AgentAction, verb: string) =>
    act('Agents', async (sess, _f, params) => {
      const a = await changeAgentState(s.ctx, sess.accountId, params.id ?? '', action)
      return { ok: `${a.name} ${verb}.` }
    })

  const formRoute = { parse: 'none' as const }

  return new Elysia()
    .get('/console/console.css', () => new Response(CSS, { headers: { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' } }), {
      detail: { summary: "The owner console's stylesheet" },
    })
    .get(
      '/console/sign-in',
      async ({ request }) => {
        const existing = await readSession(s.ctx, cookieOf(request, SESSION_COOKIE)).catch(() => null)
        if (existing) return redirect('/console')
        const csrf = newSigninToken()
        return signinPage(csrf, { setCookie: signinCookie(csrf, cookie) })
      },
      { detail: { summary: 'HTML: owner console sign-in (owner token)' } },
    )
    .post(
      '/console/sign-in',
      async ({ request, server }) => {
        let next: string | undefined
        const again = (error: string, status: number, headers: Record<string, string> = {}) => {
          const csrf = newSigninToken()
          const res = signinPage(csrf, { error, status, setCookie: signinCookie(csrf, cookie), next })
          for (const [k, v] of Object.entries(headers)) res.headers.set(k, v)
          return res
        }
        try {
          // Per client IP before anything else: guessing tokens costs one request each.
          await h.anonymous(request, server)
          const form = await readConsoleForm(request)
          next = form.next
          if (!csrfMatches(cookieOf(request, SIGNIN_COOKIE), form.csrf)) return again('The form had expired. Please sign in again.', 403)
          const { principal } = await h.operator((form.token ?? '').trim(), request, server)
          const sess = await openSession(s.ctx, principal)
          // Back to the OAuth consent page that asked for the sign-in, if one did (docs/mcp-oauth.md).
          const res = redirect(safeNext(form.next) ?? '/console')
          res.headers.append('set-cookie', sessionCookie(sess.cookie, cookie))
          res.headers.append('set-cookie', expiredCookie(SIGNIN_COOKIE, cookie))
          return res
        } catch (e) {
          if (!(e instanceof ApiError)) return failurePage(request, e)
          noteError(request, e)
          if (e.code === 'FORBIDDEN') return again('That is an agent token. Only the owner token (sk_…) signs in to the console.', 403)
          if (e.code === 'UNAUTHORIZED') return again('That token was not recognised: check that it is the current owner token.', 401)
          if (e.code === 'RATE_LIMITED') return again('Too many sign-in attempts from this address. Wait a minute and try again.', 429, e.headers)
          return failurePage(request, e)
        }
      },
      { ...formRoute, detail: { summary: 'HTML form post: sign in with the owner token (rate-limited per IP); sets the session cookie' } },
    )
    .post(
      '/console/sign-out',
      async ({ request }) => {
        const sess = await readSession(s.ctx, cookieOf(request, SESSION_COOKIE))
        const form = await readConsoleForm(request)
        // Any form token of this session's pages, not claimed: signing out twice does no harm.
        if (sess && formNonce(sess, form.csrf)) await closeSession(s.ctx, sess.cookie)
        const res = redirect('/console/sign-in')
        res.headers.append('set-cookie', expiredCookie(SESSION_COOKIE, cookie))
        return res
      },
      { ...formRoute, detail: { summary: 'HTML form post: end the console session' } },
    )
    .get('/console', view('Overview'), { detail: { summary: 'HTML: console overview (balance, spend today, 30-day chart, top agents and routes)' } })
    .get('/console/agents', view('Agents'), { detail: { summary: 'HTML: console agents (tree, spend, kill / revive / revoke, create)' } })
    .get('/console/policies', view('Policies'), { detail: { summary: 'HTML: console policies (caps, allowlists, warning levels)' } })
    .get('/console/activity', view('Activity'), { detail: { summary: 'HTML: console activity (paged; filter by agent, route, outcome)' } })
    .get('/console/money', view('Money'), { detail: { summary: 'HTML: console money (mandate, card, refills, top-up)' } })
    .get('/console/keys', view('Keys'), { detail: { summary: 'HTML: console keys (vaulted providers, new vault link)' } })
    .get('/console/proposals', view('Proposals'), { detail: { summary: 'HTML: console proposals' } })
    .get('/console/webhooks', view('Webhooks'), { detail: { summary: 'HTML: console webhooks and the operator chat link' } })
    .get(
      '/console/ledger',
      async ({ request }) => {
        try {
          const sess = await readSession(s.ctx, cookieOf(request, SESSION_COOKIE))
          if (!sess) return redirect('/console/sign-in')
          const q = new URL(request.url).searchParams
          const range = statementRange({ from: q.get('from') ?? undefined, to: q.get('to') ?? undefined }, s.ctx.clock.now())
          const format = statementFormat(q.get('format') ?? undefined)
          const lag = await statementLag(s.ctx, sess.accountId)
          return new Response(await statementStream(s.db.db, sess.accountId, range, format), {
            // The console's headers (no sniffing, framing or Referer), the statement's type and name.
            headers: { ...CONSOLE_HEADERS, ...statementHeaders(sess.accountId, range, format, lag) },
          })
        } catch (e) {
          return failurePage(request, e)
        }
      },
      { detail: { summary: 'Download the ledger statement (as GET /v1/ledger) from a console session' } },
    )
    .post(
      '/console/agents',
      act('Agents', async (sess, f) => {
        const created = await createAgentFor(s.ctx, sess.accountId, {
          name: (f.name ?? '').trim(),
          daily_cap: optInt(f, 'daily_cap'),
          per_call_max: optInt(f, 'per_call_max'),
          allowlist: lines(f.allowlist),
        })
        return { ok: `Agent ${created.name} created.`, extra: { created: { name: created.name, token: created.token } } }
      }),
      { ...formRoute, detail: { summary: 'HTML form post: create an agent (token shown once)' } },
    )
    .post('/console/agents/:id/kill', agentMove('kill', 'killed'), { ...formRoute, detail: { summary: 'HTML form post: kill an agent' } })
    .post('/console/agents/:id/revive', agentMove('revive', 'revived'), { ...formRoute, detail: { summary: 'HTML form post: revive an agent' } })
    .post('/console/agents/:id/revoke', agentMove('revoke', 'revoked'), { ...formRoute, detail: { summary: 'HTML form post: revoke an agent' } })
    .post(
      '/console/policies',
      act('Policies', async (sess, f) => {
        if (f.agent) {
          const caps = { ...capEdit(f), per_call_max: optInt(f, 'per_call_max') }
          await putPolicies(s.ctx, sess.accountId, { agents: { [f.agent]: { ...caps, ...allowlistEdit(f) } } })
          return { ok: 'Agent policy saved.' }
        }
        const { daily_cap: cap } = capEdit(f)
        await putPolicies(s.ctx, sess.accountId, { account: { ...(cap === null || cap === undefined ? {} : { daily_cap: cap }), ...allowlistEdit(f), ...thresholdsEdit(f) } })
        return { ok: 'Account policy saved.' }
      }),
      { ...formRoute, detail: { summary: 'HTML form post: change caps and allowlists (as PUT /v1/policies)' } },
    )
    .post(
      '/console/money/mandate',
      act('Money', async (sess, f) => {
        const limits = { threshold: optInt(f, 'threshold'), refill: optInt(f, 'refill'), ceiling: optInt(f, 'ceiling') }
        await updateMandate(s, sess.accountId, Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== null)))
        return { ok: 'Mandate limits saved.' }
      }),
      { ...formRoute, detail: { summary: 'HTML form post: adjust the mandate limits (as PUT /v1/mandate)' } },
    )
    .post(
      '/console/money/topup',
      act('Money', async (sess, f) => {
        const r = await topup(s, sess.accountId, optInt(f, 'amount') ?? undefined)
        return { ok: `Topped up ${r.credits_added} credits; balance ${r.balance}.` }
      }),
      { ...formRoute, detail: { summary: 'HTML form post: top up through the mandate (as POST /v1/topup)' } },
    )
    .post(
      '/console/keys/link',
      act('Keys', async (sess, f) => ({ ok: 'Vault link created.', extra: { link: await requestLink(s, vault, sess.accountId, f.provider ?? '') } })),
      { ...formRoute, detail: { summary: 'HTML form post: a new vault link (as POST /v1/keys/link)' } },
    )
    .post(
      '/console/proposals/:id/approve',
      act('Proposals', async (sess, f, params) => {
        // '' = as asked; anything else is held to for_s' bounds by the service (a 400 naming for_s).
        const forS = f.for_s === undefined || f.for_s === '' ? undefined : /^\d+$/.test(f.for_s) ? Number(f.for_s) : NaN
        const p = await approveProposal(proposals, sess.accountId, params.id ?? '', f.note ?? '', 'api', forS)
        return { ok: `Proposal ${p.id} approved${p.lapses_at ? ` until ${p.lapses_at.replace('T', ' ').slice(0, 16)} UTC, then it lapses by itself` : ''}.` }
      }),
      { ...formRoute, detail: { summary: 'HTML form post: approve a proposal (as POST /v1/proposals/{id}/approve)' } },
    )
    .post(
      '/console/proposals/:id/decline',
      act('Proposals', async (sess, f, params) => {
        const p = await declineProposal(proposals, sess.accountId, params.id ?? '', f.note ?? '')
        return { ok: `Proposal ${p.id} declined.` }
      }),
      { ...formRoute, detail: { summary: 'HTML form post: decline a proposal (as POST /v1/proposals/{id}/decline)' } },
    )
    .post(
      '/console/webhooks',
      act('Webhooks', async (sess, f) => {
        const r = await putWebhook(s, sess.accountId, { url: (f.url ?? '').trim() })
        return { ok: 'Webhook endpoint saved.', extra: { secret: r.secret } }
      }),
      { ...formRoute, detail: { summary: 'HTML form post: set the webhook endpoint (as PUT /v1/webhooks)' } },
    )
    .post(
      '/console/webhooks/delete',
      act('Webhooks', async (sess) => {
        await deleteWebhook(s, sess.accountId)
        return { ok: 'Webhook endpoint removed.' }
      }),
      { ...formRoute, detail: { summary: 'HTML form post: remove the webhook endpoint (as DELETE /v1/webhooks)' } },
    )
    .post(
      '/console/webhooks/chat-link',
      act('Webhooks', async (sess) => ({ ok: 'Chat link code created.', extra: { chatLink: await operatorLink(s, sess.accountId) } })),
      { ...formRoute, detail: { summary: 'HTML form post: an operator chat link code (as POST /v1/operator/link)' } },
    )
}
