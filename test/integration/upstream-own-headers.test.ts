/**
 * What a provider request goes out with (upstream/request.ts, headers.ts, whose auth pairs are kept
 * per provider for its last key): each request carries exactly what the header policy builds for
 * it, and a change of key, static headers, auth or body type is seen on the next request. A request
 * with client headers (the proxy) passes them, and the next one without carries none of them.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Server } from 'bun'
import type { Provider } from '../../src/catalog/catalog'
import { upstreamHeaders } from '../../src/upstream/headers'
import { requestProvider, type ProviderRequest } from '../../src/upstream/request'

let server: Server<unknown>
const seen: Record<string, string>[] = []
beforeAll(() => {
  server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: async (req) => {
      await req.text()
      seen.push(Object.fromEntries(req.headers))
      return new Response('{}', { headers: { 'content-type': 'application/json' } })
    },
  })
})
afterAll(() => server.stop(true))

function provider(over: Partial<Provider> = {}): Provider {
  return { base_url: `http://127.0.0.1:${server.port}`, auth: { header: 'x-api-key' }, headers: { 'anthropic-version': '2023-06-01' }, ...over } as Provider
}

/** Sends `r` and answers the headers the server saw, beside those the policy builds for it. */
async function sent(r: Omit<ProviderRequest, 'maxBytes' | 'path'>): Promise<{ got: Record<string, string>; built: Record<string, string> }> {
  const full: ProviderRequest = { ...r, path: '/x', maxBytes: 1 << 20 }
  const a = await requestProvider(full)
  if (a.kind !== 'answer') throw new Error(`no answer: ${a.outcome}`)
  await a.text!()
  const built = upstreamHeaders(r.incoming, r.provider, r.apiKey, r.drop)
  if (r.contentType) built.set('content-type', r.contentType)
  if (typeof r.body === 'string') built.delete('content-length')
  return { got: seen.at(-1)!, built: Object.fromEntries(built) }
}

function policyPart(got: Record<string, string>): Record<string, string> {
  // What fetch adds on its own (host, length, connection, user-agent, accept) is not the policy's.
  const { host, 'content-length': _l, connection, 'user-agent': _u, accept, ...rest } = got
  void host, void connection, void accept
  return rest
}

test('requests without client headers go out with the policy headers of their provider, key and body, each change seen', async () => {
  const p = provider()
  const post = { provider: p, method: 'POST', apiKey: 'key-one', contentType: 'application/json', body: '{"q":1}' }
  for (const r of [
    post,
    // the same again: the auth pairs kept for the provider
    post,
    // another key
    { ...post, apiKey: 'key-two' },
    // no body, no type (a GET's)
    { provider: p, method: 'GET', apiKey: 'key-two' },
    { ...post, apiKey: 'key-two' },
  ]) {
    const { got, built } = await sent(r)
    expect(policyPart(got)).toEqual(built)
  }
  expect(seen.at(-3)!['x-api-key']).toBe('key-two')
  expect(seen.at(-2)!['content-type']).toBeUndefined()
  expect(seen.at(-1)!['content-type']).toBe('application/json')

  // The catalog's static headers or auth replaced (a reload): the next request has the new ones.
  p.headers = { 'anthropic-version': '2024-01-01' }
  expect((await sent(post)).got['anthropic-version']).toBe('2024-01-01')
  p.auth = { header: 'authorization', scheme: 'Bearer' }
  const { got } = await sent(post)
  expect(got.authorization).toBe('Bearer key-one')
  expect(got['x-api-key']).toBeUndefined()
})

test('a request with client headers passes the client headers; the next request without carries none of them', async () => {
  const p = provider()
  await sent({ provider: p, method: 'POST', apiKey: 'key-one', contentType: 'application/json', body: '{}' })
  const incoming = new Headers({ 'x-client': 'mine', 'x-api-key': 'client-key', 'content-length': '2' })
  const { got, built } = await sent({ provider: p, method: 'POST', apiKey: 'key-one', incoming, body: '{}' })
  expect(policyPart(got)).toEqual(built)
  expect(got['x-client']).toBe('mine')
  expect(got['x-api-key']).toBe('key-one')
  // And the next request without client headers carries none of them.
  const again = await sent({ provider: p, method: 'POST', apiKey: 'key-one', contentType: 'application/json', body: '{}' })
  expect(again.got['x-client']).toBeUndefined()
  expect(policyPart(again.got)).toEqual(again.built)
})
