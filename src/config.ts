/**
 * Every environment variable the service reads (docs/api.md §1), validated once at boot.
 * A bad value stops the process with a message naming the variable and what it expects.
 */
import { Type as T, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { isIP } from 'node:net'
import { isLoopbackAddress, trustedProxies } from './edge/client-ip'

const Int = (def: number, min = 0) => T.Integer({ default: def, minimum: min })

export const ConfigSchema = T.Object({
  /** HTTP port. @default 8080 */
  PORT: Int(8080, 0),
  /** Absolute base used in enable_url, status_url and vault links. @default http://localhost:$PORT */
  BASE_URL: T.Optional(T.String({ pattern: '^https?://' })),
  /**
   * The address the HTTP server binds (`0.0.0.0`: every IPv4 interface, `::`: every interface,
   * or one address). Unset: loopback only (127.0.0.1 and ::1) while BASE_URL is loopback, since a
   * local quick start runs the sandbox and the demo provider; every interface otherwise.
   * @default loopback for a loopback BASE_URL, else every interface
   */
  LISTEN_HOST: T.Optional(T.String({ minLength: 2 })),
  /** Primary ledger. @default redis://127.0.0.1:6379 */
  REDIS_URL: T.String({ default: 'redis://127.0.0.1:6379', pattern: '^rediss?://' }),
  /** `host:port,...` selects Redis Cluster instead of REDIS_URL. */
  REDIS_CLUSTER_NODES: T.Optional(T.String({ pattern: '^[^,:]+:\\d+(,[^,:]+:\\d+)*$' })),
  /** Namespace of every Redis key (tests use a random one per file). @default pab */
  REDIS_KEY_PREFIX: T.String({ default: 'pab', pattern: '^[A-Za-z0-9_-]+$' }),
  /** Postgres for the durable ledger; unset → embedded PGlite in PGLITE_DIR. */
  DATABASE_URL: T.Optional(T.String({ pattern: '^postgres(ql)?://' })),
  /** Where the embedded PGlite keeps its files. @default ./data/pg */
  PGLITE_DIR: T.String({ default: './data/pg' }),
  /** Where the self-started redis-server (no Redis at a loopback REDIS_URL) keeps its append-only file. @default ./data/redis */
  REDIS_DATA_DIR: T.String({ default: './data/redis' }),
  /** How often every instance checks that Redis still holds the whole ledger (its marks), ms. @default 5000 */
  LEDGER_CHECK_MS: Int(5000, 100),
  /** Path of the catalog file: providers, capabilities and proxy routes with their prices (docs/catalog.md). @default built-in catalog.json */
  CATALOG_FILE: T.Optional(T.String()),
  /** Founder (service owner) bearer for /admin/* (16+ characters); unset → founder surfaces answer NOT_CONFIGURED. */
  ADMIN_TOKEN: T.Optional(T.String({ minLength: 16 })),
  /** The vault's key-encryption key: 32 random bytes, base64 (`openssl rand -base64 32`); unset → the vault answers NOT_CONFIGURED. */
  VAULT_MASTER_KEY: T.Optional(T.String()),
  /**
   * 32 bytes, base64: the master key being rotated away from. Rows it wrapped stay readable (new
   * keys are always wrapped by VAULT_MASTER_KEY), so a deployment restarts on the new key first
   * and runs `vault:rotate` after, with no moment where vaulted keys cannot be read.
   */
  VAULT_PREVIOUS_MASTER_KEY: T.Optional(T.String()),
  /**
   * Key of the end-user id the house lane of the proxy sends to the provider (docs/house-lane.md):
   * `pab_` + HMAC-SHA256(this, account id). Unset → one is generated on first start and kept in
   * Redis (shared by every instance); set it to keep the ids across a Redis rebuilt from Postgres.
   */
  END_USER_ID_SECRET: T.Optional(T.String({ minLength: 32 })),
  /** `sandbox` (development only) or `stripe`. @default sandbox */
  PAYMENTS: T.Union([T.Literal('sandbox'), T.Literal('stripe')], { default: 'sandbox' }),
  /**
   * `1` lets sandbox payments run on a BASE_URL or LISTEN_HOST that is not loopback (a shared
   * staging host). The sandbox credits any balance for the public test card, so a deployment
   * reachable from elsewhere refuses to boot in sandbox mode without this opt-in, and without it
   * the sandbox's pages answer only clients on this machine. @default 0
   */
  PAYMENTS_SANDBOX_PUBLIC: T.Union([T.Literal('0'), T.Literal('1')], { default: '0' }),
  /** Stripe secret key (`sk_live_…` / `sk_test_…`); required with PAYMENTS=stripe. */
  STRIPE_SECRET_KEY: T.Optional(T.String()),
  /** Signing secret of the Stripe webhook endpoint `{BASE_URL}/webhooks/stripe` (`whsec_…`); required with PAYMENTS=stripe. */
  STRIPE_WEBHOOK_SECRET: T.Optional(T.String()),
  /** Points the Stripe SDK at another host (tests use a loopback fake). @default Stripe's API */
  STRIPE_API_BASE: T.Optional(T.String()),
  /** Requests per minute per token. @default 60 */
  RATE_LIMIT_PER_TOKEN: Int(60, 1),
  /** Unauthenticated requests per minute per client IP. @default 10 */
  RATE_LIMIT_PER_IP: Int(10, 1),
  /** Comma-separated proxy addresses or CIDR blocks (IPv4 or IPv6) whose X-Forwarded-For is trusted for the per-IP limit. */
  TRUSTED_PROXIES: T.String({ default: '' }),
  /** Account daily spend cap, credits. @default 20000 */
  DEFAULT_DAILY_CAP: Int(20000),
  /** Account balance cap, credits. @default 100000 */
  DEFAULT_BALANCE_CAP: Int(100000),
  /** Requests per account per HKT day on unpriced routes. @default 1000 */
  UNPRICED_DAILY_REQUEST_CAP: Int(1000),
  /** Proxy response cap in bytes. @default 2097152 */
  PROXY_MAX_RESPONSE_BYTES: Int(2097152, 1),
  /** Request body limit in bytes. @default 1048576 */
  MAX_BODY_BYTES: Int(1048576, 1),
  /** Signups per hour that trip the trial-abuse alarm. @default 200 */
  SIGNUP_ALARM_PER_HOUR: Int(200, 1),
  /** Outgoing mail; unset → .eml files under ./data/mail/. */
  SMTP_URL: T.Optional(T.String({ pattern: '^smtps?://' })),
  /** Where mail goes as `.eml` files when SMTP_URL is unset (tests point it at a temp dir). @default ./data/mail */
  MAIL_DIR: T.String({ default: './data/mail' }),
  /** Referral bonuses one referrer earns per HKT day (the referred side always gets its own); past it the entry records the bonus as uncredited. @default 20 */
  REFERRAL_BONUS_PER_DAY: Int(20),
  /** Credits per US dollar. @default 1000 */
  CREDITS_PER_USD: Int(1000, 1),
  /**
   * Flusher batch size (outbox entries per shard per round). One account's entries all land in its
   * shard, so a busy fleet under one account fills one shard's batch first. @default 2000
   */
  FLUSH_BATCH: Int(2000, 1),
  /** Flusher idle poll interval in ms. @default 50 */
  FLUSH_INTERVAL_MS: Int(50, 1),
  /** Outbox entries pending this long on a flusher that stopped answering (a crashed process) are taken over. @default 30000 */
  FLUSH_STALE_MS: Int(30000, 1),
  /** Set to 0 to run an API instance without its own flusher. @default 1 */
  FLUSHER: T.Union([T.Literal('0'), T.Literal('1')], { default: '1' }),
  /** /status is `degraded` (reason `ledger_lag`) while more outbox entries than this wait for Postgres. @default 10000 */
  STATUS_MAX_LAG_ENTRIES: Int(10000),
  /** /status is `degraded` (reason `ledger_lag`) while the oldest unflushed outbox entry is older than this, ms. @default 60000 */
  STATUS_MAX_LAG_MS: Int(60000),
  /** /status is `degraded` (reason `dead_letters`) while more dead letters than this await the founder (0: any). @default 0 */
  STATUS_MAX_DEAD_LETTERS: Int(0),
  /** `json` structured logs or `silent`. @default json */
  LOG: T.Union([T.Literal('json'), T.Literal('silent')], { default: 'json' }),
  /** Bearer that GET /metrics requires; unset → /metrics is open (scrape it on a private network). */
  METRICS_TOKEN: T.Optional(T.String({ minLength: 16 })),
  /** Runaway-agent breaker default: credits one agent may spend per sliding minute before it is killed (0 = off); per-agent `breaker` policy overrides. @default 1000 */
  BREAKER_CREDITS_PER_MINUTE: Int(1000),
  /** Runaway-agent breaker default: identical requests (same target and body) one agent may send per sliding minute (0 = off). @default 20 */
  BREAKER_IDENTICAL_PER_MINUTE: Int(20),
  /** A debit that takes the balance below this many credits emits `balance.low` (the mandate's threshold wins while auto-refill is on; 0 = off). @default 100 */
  LOW_BALANCE_ALERT: Int(100),
  /** Telegram bot token of the operator channel; unset → POST /ops/telegram and /v1/operator/link answer NOT_CONFIGURED. */
  TELEGRAM_BOT_TOKEN: T.Optional(T.String({ pattern: '^\\d+:[A-Za-z0-9_-]+$' })),
  /** Secret Telegram echoes in X-Telegram-Bot-Api-Secret-Token (set with setWebhook's secret_token); required with the bot token. */
  TELEGRAM_WEBHOOK_SECRET: T.Optional(T.String({ pattern: '^[A-Za-z0-9_-]{16,256}$' })),
  /** Bot API base (tests point it at a loopback fake). @default https://api.telegram.org */
  TELEGRAM_API_BASE: T.String({ default: 'https://api.telegram.org', pattern: '^https?://' }),
  /** `1` lets a webhook endpoint be plain http://127.0.0.1 (tests, local development only). @default 0 */
  WEBHOOKS_ALLOW_INSECURE_LOOPBACK: T.Union([T.Literal('0'), T.Literal('1')], { default: '0' }),
  /** How often the event delivery worker looks for due webhook and chat deliveries, ms. @default 1000 */
  EVENT_POLL_MS: Int(1000, 10),
  /**
   * The built-in demo provider (`demo.echo`, `demo.flaky`, served by this service under /demo/):
   * `auto` turns it on only when BASE_URL is loopback (a local quick start), `on`/`off` force it. @default auto
   */
  DEMO_PROVIDER: T.Union([T.Literal('auto'), T.Literal('on'), T.Literal('off')], { default: 'auto' }),
  /**
   * Comma-separated origins (`https://app.example.com`) whose browser pages may call /mcp besides
   * BASE_URL's own; any other `Origin` is refused 403 (docs/api.md §10). @default '' (none)
   */
  MCP_ALLOWED_ORIGINS: T.String({ default: '' }),
  /**
   * The reconciliation with the providers' bills (docs/api.md §13d): a model whose token counts
   * (input, cached or output) differ from the provider's usage API by more than this percent of the
   * provider's figure is `drift` and raises `reconcile_drift:<provider>`. @default 2
   */
  RECONCILE_DRIFT_PCT: T.Number({ default: 2, minimum: 0, maximum: 100 }),
  /** How often every instance looks for a day to reconcile (the previous UTC day, or one to retry), ms; one instance runs it (a Redis lock). @default 300000 */
  RECONCILE_CHECK_MS: Int(300000, 1000),
})

export type Config = Static<typeof ConfigSchema> & { BASE_URL: string }

export class ConfigError extends Error {}

/** Settings whose value is a secret: a refusal names them, never quotes them (stderr is a log). */
const SECRET_SETTINGS = new Set(['ADMIN_TOKEN', 'METRICS_TOKEN', 'END_USER_ID_SECRET', 'VAULT_MASTER_KEY', 'VAULT_PREVIOUS_MASTER_KEY', 'STRIPE_SECRET_KEY', 'STRIPE_WEBHOOK_SECRET', 'TELEGRAM_BOT_TOKEN', 'TELEGRAM_WEBHOOK_SECRET'])

/** A URL as it may be printed: its password (REDIS_URL, DATABASE_URL, SMTP_URL may carry one) hidden. */
export function withoutPassword(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/@:]*):[^/@]*@/i, '$1:***@')
}

function shown(key: string, value: unknown): string {
  if (SECRET_SETTINGS.has(key)) return '(hidden)'
  return JSON.stringify(typeof value === 'string' ? withoutPassword(value) : value)
}

/** Parses an env-like record; throws ConfigError naming every bad variable. */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const known = Object.keys(ConfigSchema.properties)
  const raw: Record<string, unknown> = {}
  for (const k of known) if (env[k] !== undefined && env[k] !== '') raw[k] = env[k]
  const withDefaults = Value.Default(ConfigSchema, Value.Convert(ConfigSchema, raw))
  const errors = [...Value.Errors(ConfigSchema, withDefaults)]
  if (errors.length > 0) {
    const lines = errors.map((e) => `  ${e.path.slice(1)}=${shown(e.path.slice(1), raw[e.path.slice(1)])}: ${e.message}`)
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`)
  }
  const cfg = withDefaults as Static<typeof ConfigSchema>
  if (cfg.VAULT_MASTER_KEY !== undefined && Buffer.from(cfg.VAULT_MASTER_KEY, 'base64').length !== 32)
    throw new ConfigError('invalid configuration:\n  VAULT_MASTER_KEY: expected 32 bytes, base64-encoded')
  if (cfg.VAULT_PREVIOUS_MASTER_KEY !== undefined && Buffer.from(cfg.VAULT_PREVIOUS_MASTER_KEY, 'base64').length !== 32)
    throw new ConfigError('invalid configuration:\n  VAULT_PREVIOUS_MASTER_KEY: expected 32 bytes, base64-encoded')
  if (cfg.VAULT_PREVIOUS_MASTER_KEY !== undefined && cfg.VAULT_MASTER_KEY === undefined)
    throw new ConfigError('invalid configuration:\n  VAULT_PREVIOUS_MASTER_KEY needs VAULT_MASTER_KEY (the key rotated to)')
  if (cfg.PAYMENTS === 'stripe' && (!cfg.STRIPE_SECRET_KEY || !cfg.STRIPE_WEBHOOK_SECRET))
    throw new ConfigError('invalid configuration:\n  PAYMENTS=stripe needs STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET')
  try {
    trustedProxies(cfg.TRUSTED_PROXIES)
  } catch (e) {
    throw new ConfigError(`invalid configuration:\n  ${(e as Error).message}`)
  }
  try {
    allowedOrigins(cfg.MCP_ALLOWED_ORIGINS)
  } catch (e) {
    throw new ConfigError(`invalid configuration:\n  ${(e as Error).message}`)
  }
  if (cfg.LISTEN_HOST !== undefined && isIP(cfg.LISTEN_HOST) === 0)
    throw new ConfigError(`invalid configuration:\n  LISTEN_HOST=${JSON.stringify(cfg.LISTEN_HOST)}: expected an IP address (0.0.0.0, ::, 127.0.0.1, ...)`)
  const baseUrl = (cfg.BASE_URL ?? `http://localhost:${cfg.PORT}`).replace(/\/$/, '')
  const parsed = { ...cfg, BASE_URL: baseUrl }
  if (cfg.PAYMENTS === 'sandbox' && cfg.PAYMENTS_SANDBOX_PUBLIC !== '1' && !isLoopback(baseUrl))
    throw new ConfigError(
      `invalid configuration:\n  PAYMENTS=sandbox on BASE_URL=${baseUrl}: the sandbox credits any balance for the public test card; ` +
        'set PAYMENTS=stripe, or PAYMENTS_SANDBOX_PUBLIC=1 to run the sandbox on a non-loopback host anyway',
    )
  if (cfg.PAYMENTS === 'sandbox' && cfg.PAYMENTS_SANDBOX_PUBLIC !== '1' && !listensOnLoopbackOnly(parsed))
    throw new ConfigError(
      `invalid configuration:\n  PAYMENTS=sandbox with LISTEN_HOST=${cfg.LISTEN_HOST}: the sandbox credits any balance for the public test card ` +
        'and this listener is reachable from other machines; set PAYMENTS=stripe, or PAYMENTS_SANDBOX_PUBLIC=1 to run the sandbox there anyway',
    )
  return parsed
}

/** The addresses the HTTP server binds (listen.ts); undefined: every interface (Bun's default). */
export function listenHosts(cfg: Pick<Config, 'LISTEN_HOST' | 'BASE_URL'>): string[] | undefined {
  if (cfg.LISTEN_HOST !== undefined) return [cfg.LISTEN_HOST]
  return isLoopback(cfg.BASE_URL) ? ['127.0.0.1', '::1'] : undefined
}

/** True when only this machine can reach the listener. */
export function listensOnLoopbackOnly(cfg: Pick<Config, 'LISTEN_HOST' | 'BASE_URL'>): boolean {
  return listenHosts(cfg)?.every(isLoopbackAddress) ?? false
}

/** localhost (and *.localhost), 127.0.0.0/8 or ::1: only this machine can reach the pages. */
export function isLoopback(url: string): boolean {
  const host = new URL(url).hostname
  return host === 'localhost' || host.endsWith('.localhost') || host === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)
}

/** MCP_ALLOWED_ORIGINS as serialized origins; throws naming the first entry that is not `scheme://host[:port]`. */
export function allowedOrigins(list: string): string[] {
  return list
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '')
    .map((entry) => {
      const url = URL.canParse(entry) ? new URL(entry) : null
      if (!url || !/^https?:$/.test(url.protocol) || url.pathname !== '/' || url.search || url.hash || url.username)
        throw new Error(`MCP_ALLOWED_ORIGINS: ${JSON.stringify(entry)} is not an origin like https://app.example.com`)
      return url.origin
    })
}

/** For the entry point: parse process.env or exit with the message. */
export function loadConfigOrExit(): Config {
  try {
    return parseConfig(process.env)
  } catch (e) {
    if (e instanceof ConfigError) {
      console.error(e.message)
      process.exit(2)
    }
    throw e
  }
}
