/**
 * One upstream request of a capability call, with the provider key, a timeout, no redirects
 * (the upstream host comes only from the catalog) and a cap on the response size.
 */
import type { Capability, Provider } from '../catalog/catalog'

export type UpstreamResult =
  | { kind: 'response'; status: number; body: unknown }
  | { kind: 'too_large'; status: number }
  | { kind: 'timeout' }
  | { kind: 'network'; error: string }

export function authHeaders(provider: Provider, apiKey: string): Record<string, string> {
  const h: Record<string, string> = { ...(provider.headers ?? {}) }
  if (apiKey) h[provider.auth.header] = provider.auth.scheme ? `${provider.auth.scheme} ${apiKey}` : apiKey
  return h
}

export async function callUpstream(provider: Provider, cap: Capability, params: unknown, apiKey: string, maxBytes: number): Promise<UpstreamResult> {
  const url = new URL(provider.base_url + cap.path)
  const headers = authHeaders(provider, apiKey)
  let body: string | undefined
  if (cap.method === 'GET' || cap.method === 'DELETE') {
    for (const [k, v] of Object.entries((params ?? {}) as Record<string, unknown>))
      url.searchParams.set(k, typeof v === 'string' ? v : JSON.stringify(v))
  } else {
    body = JSON.stringify(params)
    headers['content-type'] = 'application/json'
  }
  let res: Response
  try {
    res = await fetch(url, { method: cap.method, headers, body, redirect: 'manual', signal: AbortSignal.timeout(cap.timeout_ms) })
  } catch (e) {
    return (e as Error).name === 'TimeoutError' ? { kind: 'timeout' } : { kind: 'network', error: (e as Error).message }
  }
  const declared = Number(res.headers.get('content-length') ?? '0')
  if (declared > maxBytes) {
    void res.body?.cancel()
    return { kind: 'too_large', status: res.status }
  }
  let text: string
  try {
    const bytes = await readCapped(res, maxBytes)
    if (bytes === null) return { kind: 'too_large', status: res.status }
    text = new TextDecoder().decode(bytes)
  } catch (e) {
    return (e as Error).name === 'TimeoutError' ? { kind: 'timeout' } : { kind: 'network', error: (e as Error).message }
  }
  const type = res.headers.get('content-type') ?? ''
  let parsed: unknown = text
  if (type.includes('json')) {
    try {
      parsed = JSON.parse(text)
    } catch {
      parsed = text
    }
  }
  return { kind: 'response', status: res.status, body: parsed }
}

/** Reads the body, giving up (and cancelling the stream) once it passes `max` bytes. */
async function readCapped(res: Response, max: number): Promise<Uint8Array | null> {
  if (!res.body) return new Uint8Array()
  const reader = res.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > max) {
      await reader.cancel()
      return null
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks)
}
