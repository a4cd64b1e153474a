/**
 * Recovering a lost owner token by e-mail: POST /v1/token/rotate {email} mails a one-time link
 * (/rotate?code=..., 10 minutes, single use) whose page asks for a confirmation; its POST shows a
 * new owner token once and kills the old one. The answer is the same, and takes the same time, whether or not the account exists:
 * the lookup, the link and the mail all happen in the background.
 * The link record is the vault link's (claim-link.lua enforces expiry and single use atomically);
 * only the SHA-256 of the code is stored.
 * errors: LINK_INVALID (malformed, unknown, expired), LINK_USED (second use).
 */
import { createHash, randomBytes } from 'node:crypto'
import { randomId } from '../../auth/tokens'
import { ApiError } from '../../errors'
import { runClaimLink, runReleaseLink } from '../../lua/links'
import type { Services } from '../../services'
import { swapOwnerToken } from './service'
import { endChatLinks } from '../../telegram/operator'
import { readAccount } from '../../redis/account-hash'

export const RECOVERY_LINK_TTL_MS = 600_000
/** A used link keeps its record this long, so a reuse says LINK_USED rather than LINK_INVALID. */
const USED_MARKER_MS = 86_400_000
/** At most one recovery mail per account per clock minute: the endpoint cannot flood an inbox. */
const MAIL_THROTTLE_S = 60

const CODE_RE = /^[A-Za-z0-9_-]{43}$/
const codeHash = (code: string) => createHash('sha256').update(code).digest('hex')

export const RECOVERY_MESSAGE =
  'If an account exists for this e-mail, a one-time link to replace its owner token has been sent there. The link works once, for 10 minutes; the old token stops working when it is used.'

export function requestRecovery(s: Services, rawEmail: string): { message: string } {
  const email = rawEmail.trim().toLowerCase()
  s.mailer.later(async () => {
    const { redis, keys } = s.ctx
    const accountId = await redis.get(keys.email(email))
    if (!accountId) return null
    const now = s.ctx.clock.now()
    const minute = Math.floor(now / (MAIL_THROTTLE_S * 1000))
    if ((await redis.set(keys.recoveryMailed(accountId, minute), '1', 'EX', 2 * MAIL_THROTTLE_S, 'NX')) === null) return null
    const code = randomBytes(32).toString('base64url')
    const key = keys.recoveryLink(codeHash(code))
    const exp = now + RECOVERY_LINK_TTL_MS
    // `iat`: a recovery completed after this moment voids the link (rotate-owner.lua).
    await redis.multi().hset(key, 'acct', accountId, 'provider', 'owner-token', 'exp', exp, 'iat', now).pexpire(key, RECOVERY_LINK_TTL_MS).exec()
    s.log.info('token_recovery_mailed', { account_id: accountId })
    return {
      to: email,
      subject: 'Replace your API owner token',
      text: [
        'Someone (hopefully you) asked to replace the owner token of your prepaid API balance account.',
        '',
        'Open this link to get a new owner token. It works once, within 10 minutes; the old token stops working when you open it:',
        `${s.cfg.BASE_URL}/rotate?code=${code}`,
        '',
        'If you did not ask for this, ignore this e-mail: nothing changes until the link is opened.',
      ].join('\n'),
    }
  })
  return { message: RECOVERY_MESSAGE }
}

/**
 * What the GET page shows: the link's state, without using it up. Mail scanners and link
 * previewers follow GETs; only the confirm form's POST (redeemRecovery) rotates.
 */
export async function inspectRecovery(s: Services, code: string | undefined): Promise<{ email: string }> {
  if (!code || !CODE_RE.test(code)) throw new ApiError('LINK_INVALID')
  const { redis, keys } = s.ctx
  const [acct, exp, used, iat] = await redis.hmget(keys.recoveryLink(codeHash(code)), 'acct', 'exp', 'used', 'iat')
  if (!acct || !exp) throw new ApiError('LINK_INVALID')
  if (used) throw new ApiError('LINK_USED')
  if (s.ctx.clock.now() >= Number(exp)) throw new ApiError('LINK_INVALID')
  const { email, rec } = await readAccount(s.ctx, acct, 'email', 'rec')
  if (rec !== null && rec >= Number(iat ?? 0)) throw new ApiError('LINK_INVALID')
  return { email: email ?? '' }
}

/** Rotation attempts of one recovery: a lost compare-and-set is retried once with the owner read again. */
const SWAP_ATTEMPTS = 2

/**
 * Claims the link (once) and rotates the owner token, whatever it is now: the swap compares with the
 * owner it read, and a rotation that landed in between (made with a stolen token, perhaps) only
 * makes it read again and replace that one too. Should it lose twice, the link is given back and
 * nothing is rotated: the owner submits it again.
 * errors: LINK_INVALID, LINK_USED, CONFLICT (lost the swap twice; the link still works).
 */
export async function redeemRecovery(s: Services, code: string | undefined): Promise<{ token: string; email: string }> {
  if (!code || !CODE_RE.test(code)) throw new ApiError('LINK_INVALID')
  const { keys } = s.ctx
  const linkKey = keys.recoveryLink(codeHash(code))
  const claimId = randomId(8)
  const reply = await runClaimLink(s.ctx, { linkKey, now: s.ctx.clock.now(), claimId, usedMarkerMs: USED_MARKER_MS })
  if (reply.status === 'link_used') throw new ApiError('LINK_USED')
  if (reply.status !== 'ok') throw new ApiError('LINK_INVALID')
  const accountId = reply.accountId
  // A link from before `iat` was kept (a deploy ago) counts as issued at 0: any completed recovery voids it.
  const issuedAt = Number((await s.ctx.redis.hget(linkKey, 'iat')) ?? 0)
  for (let attempt = 1; attempt <= SWAP_ATTEMPTS; attempt++) {
    const { owner: oldHash, email } = await readAccount(s.ctx, accountId, 'owner', 'email')
    const rotated = await swapOwnerToken(s.ctx, s.guard.tokens, accountId, oldHash ?? '', issuedAt)
    if (rotated) {
      s.log.info('token_recovered', { account_id: accountId, attempt })
      await endChatLinks(s, accountId)
      return { token: rotated.token, email: email ?? '' }
    }
  }
  await runReleaseLink(s.ctx, { linkKey, claimId })
  s.log.warn('token_recovery_raced', { account_id: accountId })
  throw new ApiError('CONFLICT', { reason: 'the owner token changed twice while it was being replaced; nothing was changed and the link still works: submit it again' })
}
