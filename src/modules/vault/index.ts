import { Elysia } from 'elysia'
import { ApiError } from '../../errors'
import { randomId } from '../../auth/tokens'
import { bearerAuth, http, type Http } from '../../http'
import type { Services } from '../../services'
import { CodeParams, KeyLinkBody, KeyLinkResponse, KeysResponse, ProviderParams } from './model'
import { errorPage, formPage, storedPage } from './pages'
import { deleteKey, openVault, requestLink, submitKey, viewLink } from '../../vault/account-keys'
import { noteError } from '../../observe'
import { readBytes } from '../../edge/body'
import { checkText } from '../../edge/text'

export const vaultRoutes = (s: Services, h: Http = http(s)) => {
  const vault = openVault(s)

  /** The pages answer browsers with HTML and JSON clients with JSON, errors included. */
  const pageAnswer = async (request: Request, run: () => Promise<Response>): Promise<Response> => {
    let res: Response
    try {
      res = await run()
    } catch (e) {
      const err = e instanceof ApiError ? e : internal(s, e, request)
      noteError(request, err)
      res = wantsJson(request) ? err.toResponse() : errorPage(err)
      for (const [k, v] of Object.entries(err.headers)) res.headers.set(k, v)
    }
    res.headers.set('cache-control', 'no-store')
    res.headers.set('referrer-policy', 'no-referrer')
    return res
  }

  return new Elysia()
    .use(bearerAuth)
    .post(
      '/v1/keys/link',
      async (c) => {
        const principal = await h.admitIn(c)
        const { body, set } = c
        const link = await requestLink(s, vault, principal.accountId, body.provider)
        set.status = 201
        return link
      },
      {
        parse: h.json,
        body: KeyLinkBody,
        response: { 201: KeyLinkResponse },
        detail: { summary: 'A one-time link (10 minutes) where the key owner pastes a provider key into the vault' },
      },
    )
    .get(
      '/v1/keys',
      async (c) => {
        const principal = await h.admitIn(c)
        vault.requireMaster()
        return { keys: await vault.list(principal.accountId) }
      },
      { response: { 200: KeysResponse }, detail: { summary: 'Vaulted provider keys of the account (last4 only)' } },
    )
    .delete(
      '/v1/keys/:provider',
      async (c) => {
        const { params } = c
        const { principal, headers } = await h.admitted(c)
        await deleteKey(vault, principal.accountId, params.provider)
        return new Response(null, { status: 204, headers })
      },
      { params: ProviderParams, detail: { summary: 'Remove a vaulted provider key (204)' } },
    )
    .get(
      '/vault/:code',
      ({ params, request, server }) =>
        pageAnswer(request, async () => {
          const rate = await h.anonymous(request, server)
          const res = formPage(params.code, await viewLink(s, vault, params.code))
          for (const [k, v] of Object.entries(rate)) res.headers.set(k, v)
          return res
        }),
      { params: CodeParams, detail: { summary: 'HTML page: paste one provider key (one-time link from POST /v1/keys/link)' } },
    )
    .post(
      '/vault/:code',
      ({ params, request, server }) =>
        pageAnswer(request, async () => {
          const rate = await h.anonymous(request, server)
          const stored = await submitKey(s, vault, params.code, () => readKey(request, s.cfg.MAX_BODY_BYTES))
          const res = wantsJson(request)
            ? Response.json({ provider: stored.provider, last4: stored.last4, created_at: stored.created_at }, { headers: { 'cache-control': 'no-store' } })
            : storedPage(stored)
          for (const [k, v] of Object.entries(rate)) res.headers.set(k, v)
          return res
        }),
      {
        // The key is read here, not by Elysia: a parse failure must not echo or log the body.
        parse: 'none',
        params: CodeParams,
        detail: { summary: 'Store the key of a vault link: form field or JSON `key`; 200 page (JSON {provider, last4, created_at} for JSON clients)' },
      },
    )
}

function wantsJson(request: Request): boolean {
  const accept = request.headers.get('accept') ?? ''
  if (accept.includes('application/json')) return true
  return !accept.includes('text/html') && mediaType(request) === 'application/json'
}

function mediaType(request: Request): string {
  return (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
}

async function readKey(request: Request, limit: number): Promise<unknown> {
  const key = await readKeyField(request, limit)
  // A provider key is one line of printable text: a control character inside it is a paste gone
  // wrong. Around it (a copied line's end) it is trimmed, as the store does.
  checkText({ key: typeof key === 'string' ? key.trim() : key })
  return key
}

async function readKeyField(request: Request, limit: number): Promise<unknown> {
  const type = mediaType(request)
  const bytes = await readBytes(request, limit)
  if (type === 'multipart/form-data') {
    try {
      return (await new Response(bytes, { headers: { 'content-type': request.headers.get('content-type')! } }).formData()).get('key')
    } catch {
      throw new ApiError('BAD_REQUEST', { field: 'body', expected: 'a multipart form with a "key" field' })
    }
  }
  const text = new TextDecoder().decode(bytes)
  if (type === 'application/x-www-form-urlencoded') return new URLSearchParams(text).get('key')
  if (type === 'application/json') {
    try {
      return (JSON.parse(text) as { key?: unknown } | null)?.key
    } catch {
      throw new ApiError('BAD_REQUEST', { field: 'body', expected: 'a JSON object {"key": "..."}' })
    }
  }
  throw new ApiError('BAD_REQUEST', { field: 'content-type', expected: 'application/x-www-form-urlencoded, multipart/form-data or application/json' })
}

/** An unexpected failure on a page: logged without the request body, answered as INTERNAL. */
function internal(s: Services, e: unknown, request: Request): ApiError {
  const requestId = randomId(8)
  s.log.error('unhandled', { request_id: requestId, path: '/vault/{code}', method: request.method, error: e instanceof Error ? e.name : 'unknown' })
  return new ApiError('INTERNAL', { request_id: requestId })
}
