/**
 * `bun run vault:rotate`: re-wraps every vaulted key's data key under a new master key.
 * Without a window (the service reads rows under either key meanwhile), with the service's env:
 *   1. restart the service with VAULT_MASTER_KEY = the new key, VAULT_PREVIOUS_MASTER_KEY = the old
 *      one (new keys are stored under the new key; rows under the old one are still read);
 *   2. run this command with that same env: it re-wraps from the previous key to the current one;
 *   3. drop VAULT_PREVIOUS_MASTER_KEY at the next restart.
 * Or, with the service still on the old key: VAULT_MASTER_KEY = the old key and
 * VAULT_NEW_MASTER_KEY = the new one, then restart on the new key; until that restart the running
 * service cannot read rotated rows (KEY_UNREADABLE), and keys stored before it stay under the old
 * key until the next run, so this form needs a maintenance window.
 * DATABASE_URL as for the service (unset → the embedded PGlite in PGLITE_DIR).
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
if (next && cfg.VAULT_PREVIOUS_MASTER_KEY) fail('set VAULT_NEW_MASTER_KEY or VAULT_PREVIOUS_MASTER_KEY, not both')
if (!next && !cfg.VAULT_PREVIOUS_MASTER_KEY)
  fail('VAULT_NEW_MASTER_KEY (the new master key, 32 bytes base64) is not set, nor VAULT_PREVIOUS_MASTER_KEY (the key being rotated away from)')
let from: ReturnType<typeof masterKeyFrom>
let to: ReturnType<typeof masterKeyFrom>
if (next) {
  try {
    to = masterKeyFrom(next)
  } catch {
    fail('VAULT_NEW_MASTER_KEY: expected 32 bytes, base64-encoded')
  }
  from = masterKeyFrom(cfg.VAULT_MASTER_KEY)
} else {
  // The service's own env during a rotation: from the previous key to the current one.
  from = masterKeyFrom(cfg.VAULT_PREVIOUS_MASTER_KEY!)
  to = masterKeyFrom(cfg.VAULT_MASTER_KEY)
}

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
