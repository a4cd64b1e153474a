/**
 * One upstream request of a capability call, with the provider key, a timeout, no redirects
 * (the upstream host comes only from the catalog) and a cap on the response size. The cap counts
 * decoded bytes: identity encoding is asked for, and a provider that compresses anyway is decoded
 * here rather than by Bun's fetch, so that a coding we cannot undo is refused, not passed on raw.
 * The provider key is masked in the decoded text, as the proxy masks it.
 */
import { decodeBody, decodersFor } from './content-encoding'
import { maskKey } from './scrub'
import { asWritten, memberText } from '../json-members'
import type { Capability, Provider } from '../catalog/catalog'

export type UpstreamResult =
  /** `hasLocation`: a 3xx that points elsewhere is not an answer (we never follow it). */
  | {
      kind: 'response'
      status: number
      body: unknown
      /**
       * The answer's text when it parsed as JSON (the key masked): what the caller is handed, as the
       * provider wrote it. Parsed and serialised again it would lose what a double cannot hold (a
       * 64-bit id, 1e400) and the provider's own spelling of numbers (1.10).
       */
      json: string | null
      hasLocation: boolean
    }
  | { kind: 'too_large'; status: number }
  /** A Content-Encoding we cannot decode (a provider failure, refunded). */
  | { kind: 'bad_encoding'; status: number }
  | { kind: 'timeout' }
  | { kind: 'network'; error: string }
  /** The caller went away: the upstream request was aborted with it. */
  | { kind: 'client_closed' }

export function authHeaders(provider: Provider, apiKey: string): Record<string, string> {
  const h: Record<string, string> = { ...(provider.headers ?? {}) }
  if (apiKey) h[provider.auth.header] = provider.auth.scheme ? `${provider.auth.scheme} ${apiKey}` : apiKey
  return h
}

export async function callUpstream(
  provider: Provider,
  cap: Capability,
  /** The params as parsed (a GET's or DELETE's query), and as the JSON text a body carries. */
  params: { value: unknown; json: string },
  apiKey: string,
  maxBytes: number,
  /** The client's request signal: a client that goes away takes its upstream request with it. */
  clientGone?: AbortSignal,
): Promise<UpstreamResult> {
  const url = new URL(provider.base_url + cap.path)
  const headers = authHeaders(provider, apiKey)
  headers['accept-encoding'] = 'identity'
  let body: string | undefined
  if (cap.method === 'GET' || cap.method === 'DELETE') {
    // A non-string param as the caller wrote it (a 64-bit id serialised again would be rounded).
    for (const [k, v] of Object.entries((params.value ?? {}) as Record<string, unknown>))
      url.searchParams.set(k, typeof v === 'string' ? v : asWritten(memberText(params.json, k), v))
  } else {
    body = params.json
    headers['content-type'] = 'application/json'
  }
  const timeout = AbortSignal.timeout(cap.timeout_ms)
  const signal = clientGone ? AbortSignal.any([timeout, clientGone]) : timeout
  const failed = (e: unknown): UpstreamResult =>
    clientGone?.aborted ? { kind: 'client_closed' } : timeout.aborted || (e as Error).name === 'TimeoutError' ? { kind: 'timeout' } : { kind: 'network', error: (e as Error).message }
  let res: Response
  try {
    res = await fetch(url, { method: cap.method, headers, body, redirect: 'manual', signal, decompress: false } as RequestInit)
  } catch (e) {
    return failed(e)
  }
  const decoders = decodersFor(res.headers.get('content-encoding'))
  if (!decoders) {
    void res.body?.cancel()
    return { kind: 'bad_encoding', status: res.status }
  }
  // An encoded body's declared length is of the wire bytes; readCapped counts the decoded ones.
  const declared = decoders.length ? 0 : Number(res.headers.get('content-length') ?? '0')
  if (declared > maxBytes) {
    void res.body?.cancel()
    return { kind: 'too_large', status: res.status }
  }
  let text: string
  try {
    const bytes = await readCapped(res.body && decodeBody(res.body, decoders), maxBytes)
    if (bytes === null) return { kind: 'too_large', status: res.status }
    // A provider that quotes the key back (an error message) must not hand it to the caller.
    text = maskKey(new TextDecoder().decode(bytes), apiKey)
  } catch (e) {
    return failed(e)
  }
  const type = res.headers.get('content-type') ?? ''
  let parsed: unknown = text
  let json: string | null = null
  if (type.includes('json')) {
    try {
      parsed = JSON.parse(text)
      json = text
    } catch {
      parsed = text
    }
  }
  return { kind: 'response', status: res.status, body: parsed, json, hasLocation: res.headers.has('location') }
}

/** Reads the body, giving up (and cancelling the stream) once it passes `max` bytes. */
async function readCapped(body: ReadableStream<Uint8Array> | null, max: number): Promise<Uint8Array | null> {
  if (!body) return new Uint8Array()
  const reader = body.getReader()
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
