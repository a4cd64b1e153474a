/**
 * The write-behind flusher as a process of its own: `bun run flusher`. Run API instances with
 * FLUSHER=0 and one or more of these beside them (consumer-group members share the outbox; a dead
 * one's entries are reclaimed by the others). The flush work then leaves the API's event loop, and
 * on a multi-core host its CPU. Needs DATABASE_URL: the embedded PGlite belongs to one process.
 */
import { loadConfigOrExit } from './config'
import { installProcessGuard } from './process-guard'
import { buildServices } from './services'

const cfg = loadConfigOrExit()
if (!cfg.DATABASE_URL) {
  console.error('the flusher process needs DATABASE_URL (PGlite is private to the API process)')
  process.exit(2)
}
const services = await buildServices(cfg)
installProcessGuard(services.log)
services.flusher.start()
services.log.info('flusher_started', { consumer: services.flusher.consumer })

let stopping = false
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
  process.on(sig, async () => {
    if (stopping) return
    stopping = true
    await services.close() // stops the loop, then drains what is left
    process.exit(0)
  })
