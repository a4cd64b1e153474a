/**
 * `bun run vault:rotate`: re-wraps every vaulted key's data key under a new master key.
 *   VAULT_MASTER_KEY      the current master key (32 bytes, base64)
 *   VAULT_NEW_MASTER_KEY  the new one
 *   DATABASE_URL          as for the service (unset → the embedded PGlite in PGLITE_DIR)
 * Run it, then restart the service with VAULT_MASTER_KEY set to the new key. Until the restart the
 * running service cannot read rotated rows (KEY_UNREADABLE), so rotate in a maintenance window.
 */
import { parseConfig, ConfigError } from '../src/config'
import { openDatabase } from '../src/db/client'
import { masterKeyFrom } from '../src/vault/crypto'
import { rotateMasterKey, RotationError } from '../src/vault/rotate'

function fail(message: string): never {
  console.error(`vault:rotate: ${message}`)
  process.exit(1)
}

let cfg: ReturnType<typeof parseConfig>
try {
  cfg = parseConfig(process.env)
} catch (e) {
  if (e instanceof ConfigError) fail(e.message)
  throw e
}
if (!cfg.VAULT_MASTER_KEY) fail('VAULT_MASTER_KEY (the current master key) is not set')
const next = process.env.VAULT_NEW_MASTER_KEY
if (!next) fail('VAULT_NEW_MASTER_KEY (the new master key, 32 bytes base64) is not set')
let to: ReturnType<typeof masterKeyFrom>
try {
  to = masterKeyFrom(next)
} catch {
  fail('VAULT_NEW_MASTER_KEY: expected 32 bytes, base64-encoded')
}
const from = masterKeyFrom(cfg.VAULT_MASTER_KEY)

const db = await openDatabase(cfg)
try {
  const r = await rotateMasterKey(db.db, from, to)
  console.log(`vault:rotate: ${r.rewrapped} key(s) re-wrapped from ${from.id} to ${to.id}; ${r.alreadyRotated} already under ${to.id}`)
} catch (e) {
  if (e instanceof RotationError) fail(e.message)
  throw e
} finally {
  await db.close()
}
