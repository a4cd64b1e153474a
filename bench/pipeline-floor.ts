/**
 * The "pipeline floor" rows of the proxy bench (issue 14): the paid-request pipeline alone, flat and
 * metered, around one forwarder that is the same for both. Each request is opened on the service's
 * own pipeline (openPaidCall: debit.lua with its lease, flat or with the metered reservation), sent
 * upstream, read whole, settled (a flat `ok`: the filing, not awaited, as the proxy files it; a
 * metered `ok`: settle.lua with a fixed provider usage, awaited before the answer goes, as the proxy
 * settles it) and answered; the in-process flusher writes every entry to Postgres, as the service's
 * does. No auth per request (a token is resolved once), no body checks, no metering of the answer,
 * no header policy, no key masking: so the ratio of the two rows is what the ledger's shape alone
 * leaves the metered route against the flat one, whatever the HTTP surface around it costs.
 *
 *   /pipeline/flat/<path>      a flat-priced proxy call of PIPELINE_FLOOR_PRICE credits on `proxy:openai`
 *   /pipeline/metered/<path>   a metered call on `proxy:llm/<model>` (the bench catalog's model)
 *   /pipeline/early/<path>     the metered call with its settle sent when the answer goes, not awaited
 *                              (the shape docs/decisions.md weighs for issue 14; measured, not served)
 *
 *   bun bench/pipeline-floor.ts   (the service's environment: PORT, DATABASE_URL, REDIS_URL, CATALOG_FILE, …)
 */
import { createApp } from '../src/app'
import { loadConfigOrExit } from '../src/config'
import { openPaidCall } from '../src/paid-request'
import type { DebitMetering } from '../src/lua/debit'
import { rememberRawPath } from '../src/proxy/raw-target'
import { buildServices } from '../src/services'
import { rememberedPrincipals } from './lib/principals'

const cfg = loadConfigOrExit()
const s = await buildServices(cfg)
const app = createApp(s)
const upstream = (process.env.PIPELINE_FLOOR_UPSTREAM ?? '').replace(/\/$/, '')
if (!upstream) throw new Error('PIPELINE_FLOOR_UPSTREAM is required (the fake upstream)')
const price = Number(process.env.PIPELINE_FLOOR_PRICE ?? '3')
/** The metered route's model and prices, as the bench's catalog holds them. */
const model = JSON.parse(process.env.PIPELINE_FLOOR_MODEL ?? '{}') as { name: string; input: number; cached_input: number; output: number; max_output: number; min_output: number }
/** What the bench's upstream reports (bench/proxy-upstream.ts): the settle charges it. */
const USAGE = { tokens: { input: 12, cached: 0, output: 40 }, source: 'provider' as const }

const principalOf = rememberedPrincipals(s)

const MODES = ['flat', 'metered', 'early'] as const
type Mode = (typeof MODES)[number]
const PREFIX = '/pipeline/'

function modeOf(path: string): { mode: Mode; rest: string } | null {
  if (!path.startsWith(PREFIX)) return null
  const slash = path.indexOf('/', PREFIX.length)
  const mode = path.slice(PREFIX.length, slash) as Mode
  return slash > 0 && MODES.includes(mode) ? { mode, rest: path.slice(slash) } : null
}

const server = Bun.serve({
  port: cfg.PORT,
  hostname: '127.0.0.1',
  development: false,
  async fetch(req) {
    const url = new URL(req.url)
    const m = modeOf(url.pathname)
    if (!m || req.method !== 'POST') {
      rememberRawPath(req, null)
      return app.handle(req)
    }
    const principal = await principalOf(req)
    if (!principal) return new Response('{"error":{"code":"UNAUTHORIZED"}}', { status: 401 })
    const raw = await req.text()
    const metered: DebitMetering | undefined =
      m.mode === 'flat'
        ? undefined
        : { model: model.name, inputBound: Buffer.byteLength(raw), input: model.input, cachedInput: model.cached_input, output: model.output, ceiling: null, maxOutput: model.max_output, minOutput: model.min_output }
    const opened = await openPaidCall(s, metered ? { principal, target: `proxy:llm/${model.name}`, price: 0, unpriced: false, lease: true, metered } : { principal, target: 'proxy:openai', price, unpriced: false, lease: true })
    if (opened.kind !== 'debited') return new Response('{"error":"replayed"}', { status: 500 })
    const { call } = opened
    const res = await fetch(upstream + m.rest + url.search, { method: 'POST', headers: { 'content-type': 'application/json' }, body: raw })
    const body = await res.arrayBuffer()
    const headers = { 'content-type': res.headers.get('content-type') ?? 'application/json', 'x-pab-call-id': call.callId }
    if (m.mode === 'flat') await call.settle('ok')
    else if (m.mode === 'metered') await call.settle('ok', { usage: USAGE })
    else void call.settle('ok', { usage: USAGE }).catch((e) => s.log.error('settle_failed', { error: String(e) }))
    return new Response(body, { status: res.status, headers })
  },
})
app.server = server as unknown as typeof app.server
s.ledger.start()
if (cfg.FLUSHER === '1') s.flusher.start()
s.sweeper.start()
s.log.info('listening', { port: server.port })
