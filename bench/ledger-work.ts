/**
 * The "ledger work alone" row of the paid-call bench: the service's own paid call with nothing of
 * the HTTP API around it. `POST /v1/call/{slug}` runs `callCapability` — the capability's params
 * check, debit.lua, the upstream with the house key, the settle and record-calls.lua — on the same
 * services as src/index.ts (the same Redis scripts and batching, the in-process flusher writing
 * to Postgres); what it leaves out is Elysia's routing and hooks, the bearer's lookup on each
 * request (a token is resolved once, then remembered), the edge's body and header checks, the
 * request log, the metrics, and the client-abort signal (the bench's clients do not go away). Every other path is the full app, so the bench's signup and funding
 * work as they do on the service.
 *
 * What it shows (issue 17): how much of the paid call's CPU the API surface takes, and so how far
 * trimming it alone could move the paid call towards the ledger floor. It is not a way to serve.
 *
 *   bun bench/ledger-work.ts   (the service's environment: PORT, DATABASE_URL, REDIS_URL, CATALOG_FILE, …)
 */
import { createApp } from '../src/app'
import { callCapability } from '../src/calls/capability-call'
import { loadConfigOrExit } from '../src/config'
import { rememberRawPath } from '../src/proxy/raw-target'
import { buildServices } from '../src/services'
import { rememberedPrincipals } from './lib/principals'
import { ProviderKeys } from '../src/vault/provider-key'

const CALL = '/v1/call/'
const cfg = loadConfigOrExit()
const s = await buildServices(cfg)
const app = createApp(s)
const keys = new ProviderKeys(() => s.vaultedKey, s.log)
const principalOf = rememberedPrincipals(s)

const server = Bun.serve({
  port: cfg.PORT,
  hostname: '127.0.0.1',
  development: false,
  async fetch(req) {
    const at = req.url.indexOf(CALL)
    if (at < 0 || req.method !== 'POST') {
      rememberRawPath(req, null)
      return app.handle(req)
    }
    const principal = await principalOf(req)
    if (!principal) return new Response('{"error":{"code":"UNAUTHORIZED"}}', { status: 401 })
    try {
      const answer = await callCapability(s, keys, { principal, slug: req.url.slice(at + CALL.length), rawBody: await req.text(), idempotencyKey: null })
      return new Response(answer.body, { status: answer.status, headers: { 'content-type': 'application/json' } })
    } catch (e) {
      // The bench sends only valid calls: any error is a failed request, counted as non-2xx.
      return new Response(JSON.stringify({ error: String(e) }), { status: 500 })
    }
  },
})
app.server = server as unknown as typeof app.server
s.ledger.start()
if (cfg.FLUSHER === '1') s.flusher.start()
s.sweeper.start()
s.log.info('listening', { port: server.port })
