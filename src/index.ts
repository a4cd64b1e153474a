/** Entry point: configuration, services, listen; drain the flusher on shutdown. */
import { createApp } from './app'
import { loadConfigOrExit } from './config'
import { listen } from './listen'
import { installProcessGuard } from './process-guard'
import { ensureRedis } from './redis/embedded'
import { buildServices } from './services'

const cfg = loadConfigOrExit()
const embeddedRedis = await ensureRedis(cfg)
const services = await buildServices(cfg)
installProcessGuard(services.log)
services.metrics.withProcessMetrics()
const app = createApp(services)
// Bun.serve through listen.ts, not app.listen: the proxy's path safety needs the raw request target.
await listen(app, { port: cfg.PORT, maxBodyBytes: cfg.MAX_BODY_BYTES })
// Watches the ledger marks; rebuilds from Postgres when Redis came back empty (money paths wait).
services.ledger.start()
if (cfg.FLUSHER === '1') services.flusher.start()
// Safe on every instance: deliveries are claimed with SKIP LOCKED, never sent twice.
services.deliveries.start()
services.pauses.start()
// Every instance sweeps; a cut-off call is refunded once whoever finds it.
services.sweeper.start()
services.log.info('listening', { port: app.server?.port, base_url: cfg.BASE_URL, postgres: cfg.DATABASE_URL ? 'external' : 'pglite' })

let stopping = false
for (const sig of ['SIGINT', 'SIGTERM'] as const)
  process.on(sig, async () => {
    if (stopping) return
    stopping = true
    await app.stop()
    await services.close()
    await embeddedRedis?.stop()
    process.exit(0)
  })
