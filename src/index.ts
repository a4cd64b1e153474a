/** Entry point: configuration, services, listen; drain the flusher on shutdown. */
import { createApp } from './app'
import { loadConfigOrExit } from './config'
import { ensureRedis } from './redis/embedded'
import { buildServices } from './services'

const cfg = loadConfigOrExit()
await ensureRedis(cfg)
const services = await buildServices(cfg)
const app = createApp(services)
app.listen({ port: cfg.PORT, maxRequestBodySize: cfg.MAX_BODY_BYTES + 1024 })
if (cfg.FLUSHER === '1') services.flusher.start()
services.pauses.start()
services.log.info('listening', { port: app.server?.port, base_url: cfg.BASE_URL, postgres: cfg.DATABASE_URL ? 'external' : 'pglite' })

let stopping = false
for (const sig of ['SIGINT', 'SIGTERM'] as const)
  process.on(sig, async () => {
    if (stopping) return
    stopping = true
    await app.stop()
    await services.close()
    process.exit(0)
  })
