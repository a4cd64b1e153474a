/**
 * One upstream request of a capability call, sent as every provider request is (request.ts: the
 * key, no redirects, the timeout, decoding, the cap's declared length), its answer read whole:
 * the cap counts the decoded bytes as they come, and the provider key is masked in the decoded
 * text, as the proxy masks it.
 */
import { maskKey } from './scrub'
import { asWritten, memberText } from '../json-members'
import type { Capability, Provider } from '../catalog/catalog'
import { requestProvider, type NoAnswer } from './request'

export type UpstreamResult =
  | {
      kind: 'response'
      /** ok or provider_4xx: an answer the caller is handed. */
      outcome: 'ok' | 'provider_4xx'
      status: number
      body: unknown
      /**
       * The answer's text when it parsed as JSON (the key masked): what the caller is handed, as the
       * provider wrote it. Parsed and serialised again it would lose what a double cannot hold (a
       * 64-bit id, 1e400) and the provider's own spelling of numbers (1.10).
       */
      json: string | null
    }
  /** A 5xx, a redirect, a coding we cannot undo, an answer past the cap (a provider failure, refunded). */
  | { kind: 'refused'; outcome: 'provider_error' | 'redirect' | 'bad_encoding' | 'too_large'; status: number }
  /** No answer: not sent (the client gone first), the client gone since, the timeout, the wire. */
  | { kind: 'failed'; outcome: NoAnswer }

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
  const query = cap.method === 'GET' || cap.method === 'DELETE'
  const sent = await requestProvider({
    provider,
    method: cap.method,
    path: cap.path,
    // A non-string param as the caller wrote it (a 64-bit id serialised again would be rounded).
    params: query ? Object.entries((params.value ?? {}) as Record<string, unknown>).map(([k, v]) => [k, typeof v === 'string' ? v : asWritten(memberText(params.json, k), v)]) : undefined,
    apiKey,
    body: query ? undefined : params.json,
    contentType: query ? undefined : 'application/json',
    maxBytes,
    timeoutMs: cap.timeout_ms,
    client: clientGone,
  })
  if (sent.kind !== 'answer') return sent
  let text: string
  try {
    let raw: string
    if (sent.text) raw = await sent.text()
    else {
      const bytes = await readCapped(sent.body, maxBytes)
      if (bytes === null) return { kind: 'refused', outcome: 'too_large', status: sent.status }
      raw = new TextDecoder().decode(bytes)
    }
    // A provider that quotes the key back (an error message) must not hand it to the caller.
    text = maskKey(raw, apiKey)
  } catch (e) {
    return { kind: 'failed', outcome: sent.failed(e) }
  }
  const type = sent.headers.get('content-type') ?? ''
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
  return { kind: 'response', outcome: sent.outcome, status: sent.status, body: parsed, json }
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
