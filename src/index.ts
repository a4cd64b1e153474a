/** Entry point: configuration, services, listen; drain the flusher on shutdown. */
import { createApp } from './app'
import { listenHosts, loadConfigOrExit } from './config'
import { listen, type Listener } from './listen'
import { installProcessGuard } from './process-guard'
import { ensureRedis } from './redis/embedded'
import { buildServices } from './services'

const cfg = loadConfigOrExit()
const redis = await ensureRedis(cfg)

// From here on a signal stops what has been started so far, the Redis child last (the flusher's
// drain still needs it). SIGHUP too: a closed terminal must not leave the service half-running.
let stopServing = async () => {}
let stopping = false
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
  process.on(sig, async () => {
    if (stopping) return
    stopping = true
    await stopServing().catch((e) => console.error(`shutdown: ${e instanceof Error ? e.message : String(e)}`))
    await redis.stop()
    process.exit(0)
  })

const services = await buildServices(cfg)
installProcessGuard(services.log)
services.metrics.withProcessMetrics()
const app = createApp(services)
// Bun.serve through listen.ts, not app.listen: the proxy's path safety needs the raw request target.
const listener: Listener = await listen(app, { port: cfg.PORT, hostnames: listenHosts(cfg), maxBodyBytes: cfg.MAX_BODY_BYTES })
stopServing = async () => {
  await listener.stop()
  await services.close()
}
// Watches the ledger marks; rebuilds from Postgres when Redis came back empty (money paths wait).
services.ledger.start()
if (cfg.FLUSHER === '1') services.flusher.start()
// Safe on every instance: deliveries are claimed with SKIP LOCKED, never sent twice.
services.deliveries.start()
services.pauses.start()
// Every instance sweeps; a cut-off call is refunded once whoever finds it.
services.sweeper.start()
// Every instance looks; the one holding the Redis lock runs the day (docs/api.md §13d).
services.billCheck.start()
services.log.info('listening', {
  port: listener.port,
  addresses: listener.addresses,
  base_url: cfg.BASE_URL,
  postgres: cfg.DATABASE_URL ? 'external' : 'pglite',
  redis: redis.use,
})
