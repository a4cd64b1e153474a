/**
 * Owner console sessions (docs/api.md §9): signed in with the owner token, kept in Redis for 12 h in
 * the account's slot, carried by an HttpOnly, SameSite=Strict cookie `<acct>.<id>` (only the
 * SHA-256 of `<id>` is stored). Each session holds its own secret (`csrf`), from which every rendered
 * form gets a one-time token of its own (formTokens): a form acts at most once (claimFormToken).
 * Whether a session stands is decided by console-session.lua, which ends it once the owner token it
 * signed in with has been rotated.
 * errors: UNAUTHORIZED (unknown or rotated token), FORBIDDEN (agent token) — from the guard.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { isAccountId } from '../redis/keys'
import type { RedisContext } from '../redis/context'
import type { Principal } from '../auth/principal'
import { runConsoleSession } from '../lua/console-session'
import { denial } from '../lua/denials'
import { windowsAt } from '../windows'

export const SESSION_TTL_MS = 12 * 3600 * 1000
export const SESSION_COOKIE = 'pab_console'
/** The sign-in form's CSRF token, before there is a session (double-submit: cookie = field). */
export const SIGNIN_COOKIE = 'pab_console_signin'
const SIGNIN_TTL_S = 3600

const ID = /^[A-Za-z0-9_-]{43}$/
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')
const random = () => randomBytes(32).toString('base64url')

export interface ConsoleSession {
  accountId: string
  /** The session's secret: the key of its forms' tokens (formTokens), never put on a page itself. */
  csrf: string
  /** The cookie value (`<acct>.<id>`), to end this very session. */
  cookie: string
}

function parseCookieValue(value: string | undefined): { acct: string; id: string } | null {
  if (!value) return null
  const dot = value.lastIndexOf('.')
  const acct = value.slice(0, dot)
  const id = value.slice(dot + 1)
  return dot > 0 && isAccountId(acct) && ID.test(id) ? { acct, id } : null
}

/** Opens a session for an admitted owner principal (the guard has checked token and role). */
export async function openSession(ctx: RedisContext, owner: Principal): Promise<ConsoleSession> {
  const id = random()
  const csrf = random()
  const key = ctx.keys.consoleSession(owner.accountId, sha256(id))
  await ctx.redis
    .multi()
    .hset(key, 'owner', owner.tokenHash, 'csrf', csrf, 'exp', ctx.clock.now() + SESSION_TTL_MS)
    .pexpire(key, SESSION_TTL_MS)
    .exec()
  return { accountId: owner.accountId, csrf, cookie: `${owner.accountId}.${id}` }
}

/**
 * The session a cookie names, or null when it is unknown, expired or its owner token rotated. A
 * standing session's request counts against the owner token's rate limit (RATE_LIMITED past it).
 */
export async function readSession(ctx: RedisContext, cookie: string | undefined): Promise<ConsoleSession | null> {
  const c = parseCookieValue(cookie)
  if (!c) return null
  const now = ctx.clock.now()
  const w = windowsAt(now)
  const reply = await runConsoleSession(ctx, {
    now,
    accountId: c.acct,
    sessionIdHash: sha256(c.id),
    rateWindow: w.rate,
    prevRateWindow: w.prevRate,
    rateLimit: ctx.cfg.RATE_LIMIT_PER_TOKEN,
  })
  if (reply.status === 'rate_limited') throw denial(reply, { agentId: null, resetsAt: w.resetsAt })
  if (reply.status !== 'ok') return null
  return { accountId: c.acct, csrf: reply.csrf, cookie: cookie! }
}

export async function closeSession(ctx: RedisContext, cookie: string | undefined): Promise<void> {
  const c = parseCookieValue(cookie)
  if (c) await ctx.redis.del(ctx.keys.consoleSession(c.acct, sha256(c.id)))
}

/** Constant-time comparison of a submitted form token with the expected one. */
export function csrfMatches(expected: string | undefined, got: string | undefined): boolean {
  if (!expected || !got) return false
  const a = Buffer.from(sha256(expected))
  const b = Buffer.from(sha256(got))
  return timingSafeEqual(a, b)
}

export const newSigninToken = random

/*
 * One-time form tokens. A token is `<nonce>.<mac>`: a fresh random nonce (128 bits) and its
 * HMAC-SHA256 under the session's secret (truncated to 128 bits), so only this session's pages can
 * have made it and nothing is written when a page is rendered (a page of 1000 agents has 2000 forms).
 * Posting a form claims its nonce with one SET NX: the first post acts, any later post of the same
 * rendered form (a double click, a resend after reload or Back) finds the claim and does nothing.
 */
const FORM_TOKEN = /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{22})$/
const formMac = (secret: string, nonce: string) => createHmac('sha256', secret).update(`console-form.${nonce}`).digest().subarray(0, 16).toString('base64url')

/** Mints a new one-time token per call: each form of a rendered page gets its own. */
export const formTokens =
  (sess: ConsoleSession): (() => string) =>
  () => {
    const nonce = randomBytes(16).toString('base64url')
    return `${nonce}.${formMac(sess.csrf, nonce)}`
  }

/** The nonce of a form token this session's pages made, or null (missing, malformed, forged, another session's). */
export function formNonce(sess: ConsoleSession, got: string | undefined): string | null {
  const m = FORM_TOKEN.exec(got ?? '')
  if (!m) return null
  // Both 22 characters (the pattern): compared as written, in constant time.
  return timingSafeEqual(Buffer.from(m[2]!), Buffer.from(formMac(sess.csrf, m[1]!))) ? m[1]! : null
}

/**
 * Claims a form's nonce, atomically (SET NX): true for its first post, false for any later one. The
 * claim lives as long as a session can (12 h), so a form is never acted on twice while it can be
 * posted at all; it is in the account's slot like the session.
 */
export async function claimFormToken(ctx: RedisContext, sess: ConsoleSession, nonce: string): Promise<boolean> {
  return (await ctx.redis.set(ctx.keys.consoleForm(sess.accountId, nonce), '1', 'PX', SESSION_TTL_MS, 'NX')) === 'OK'
}

interface CookieOptions {
  secure: boolean
}

const flags = (o: CookieOptions, maxAgeS: number) => `; Path=/console; Max-Age=${maxAgeS}; HttpOnly; SameSite=Strict${o.secure ? '; Secure' : ''}`

export const sessionCookie = (value: string, o: CookieOptions) => `${SESSION_COOKIE}=${value}${flags(o, SESSION_TTL_MS / 1000)}`
export const signinCookie = (value: string, o: CookieOptions) => `${SIGNIN_COOKIE}=${value}${flags(o, SIGNIN_TTL_S)}`
export const expiredCookie = (name: string, o: CookieOptions) => `${name}=${flags(o, 0)}`

/** One cookie of a Cookie header. */
export function cookieOf(request: Request, name: string): string | undefined {
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}
