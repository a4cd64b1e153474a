/**
 * One webhook delivery, signed per the Standard Webhooks spec with the `standardwebhooks` library:
 * headers `webhook-id` (the event id: the same on every retry, so receivers dedupe on it),
 * `webhook-timestamp` and `webhook-signature` (`v1,<base64 HMAC-SHA256 of id.timestamp.body>`).
 *
 * The timestamp is the wall clock at sending, not the app clock: receivers compare it with their
 * own clock to refuse replays, so it must be the real time of this attempt.
 * Redirects are not followed (an endpoint must answer itself; a redirect could point anywhere).
 *
 * The host is checked again at every attempt (endpoint-url.ts) and a name is resolved here, every
 * answer checked: a name that resolves to a special-purpose address (DNS rebinding, or a row stored
 * before a check tightened) gets no request. The request then goes to the address that was checked,
 * with the name in `Host` and in TLS (SNI and the certificate check), so a second lookup cannot
 * swap the address. What a failure records is a category, never the connection error's text: the
 * owner reads it, and "connection refused" against "timed out" on chosen ports is a port scan.
 */
import { lookup } from 'node:dns/promises'
import { checkServerIdentity } from 'node:tls'
import { Webhook } from 'standardwebhooks'
import { endpointHost } from './endpoint-url'
import { isSpecialAddress } from './special-address'
import type { OwnerEvent } from './types'
import type { AttemptResult } from '../delivery-attempt'

/** One attempt, the DNS look-up included: a name that never resolves holds a send no longer than a host that never answers. */
export const WEBHOOK_TIMEOUT_MS = 10_000

export type { AttemptResult }

/** The JSON body of a delivery (Standard Webhooks shape: type, timestamp, data). */
export function webhookPayload(ev: OwnerEvent): string {
  return JSON.stringify({ id: ev.id, type: ev.type, timestamp: new Date(ev.at).toISOString(), account_id: ev.accountId, data: ev.data })
}

export async function sendWebhook(url: string, secret: string, ev: OwnerEvent, allowInsecureLoopback: boolean): Promise<AttemptResult> {
  const deadline = AbortSignal.timeout(WEBHOOK_TIMEOUT_MS)
  const target = await resolveTarget(url, allowInsecureLoopback, deadline)
  if (typeof target === 'string') return { ok: false, code: null, error: target }
  const body = webhookPayload(ev)
  const sentAt = new Date()
  const signature = new Webhook(secret).sign(ev.id, sentAt, body)
  try {
    const res = await fetch(target.url, {
      method: 'POST',
      headers: {
        ...target.headers,
        'content-type': 'application/json',
        'user-agent': 'prepaid-agent-balance-webhooks/1',
        'webhook-id': ev.id,
        'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
        'webhook-signature': signature,
      },
      body,
      redirect: 'manual',
      signal: deadline,
      tls: target.tls,
    } as RequestInit)
    await res.body?.cancel().catch(() => {})
    const ok = res.status >= 200 && res.status < 300
    return { ok, code: res.status, error: ok ? null : `HTTP ${res.status}` }
  } catch (e) {
    return { ok: false, code: null, error: e instanceof Error && e.name === 'TimeoutError' ? 'timeout' : 'connection failed' }
  }
}

export interface Target {
  url: URL
  headers?: Record<string, string>
  tls?: { serverName: string; checkServerIdentity: (host: string, cert: Parameters<typeof checkServerIdentity>[1]) => Error | undefined }
}

/** Where to send, pinned to a checked address; or the failure category when there is nowhere. */
export async function resolveTarget(raw: string, allowInsecureLoopback: boolean, deadline: AbortSignal): Promise<Target | string> {
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    return REFUSED
  }
  const host = endpointHost(u, allowInsecureLoopback)
  if (host.kind === 'refused') return REFUSED
  if (host.kind === 'address') return { url: u }
  let answers: { address: string; family: number }[]
  try {
    answers = await beforeDeadline(lookup(host.name, { all: true, verbatim: true }), deadline)
  } catch {
    return deadline.aborted ? 'timeout' : 'connection failed'
  }
  if (answers.length === 0) return 'connection failed'
  if (answers.some((a) => isSpecialAddress(a.address))) return REFUSED
  const pinned = new URL(u)
  pinned.hostname = answers[0]!.family === 6 ? `[${answers[0]!.address}]` : answers[0]!.address
  const name = host.name
  return { url: pinned, headers: { host: u.host }, tls: { serverName: name, checkServerIdentity: (_h, cert) => checkServerIdentity(name, cert) } }
}

const REFUSED = 'refused address'

/** `p`, or a rejection once `deadline` fires: getaddrinfo cannot be cancelled, so a late answer is dropped. */
export function beforeDeadline<T>(p: Promise<T>, deadline: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (deadline.aborted) return reject(deadline.reason)
    const onAbort = () => reject(deadline.reason)
    deadline.addEventListener('abort', onAbort, { once: true })
    p.then(resolve, reject).finally(() => deadline.removeEventListener('abort', onAbort))
  })
}
