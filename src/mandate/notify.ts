/**
 * Tells the owner, by e-mail, what an agent cannot fix: a background refill the bank refused or
 * that needs the card holder present. The remedy is always the consent page (enable_url).
 */
import type { Config } from '../config'
import type { RedisContext } from '../redis/context'
import type { Mailer } from '../mail/mailer'
import { accountLinks } from '../payments/payment-required'
import { readAccount } from '../redis/account-hash'

type Deps = { ctx: RedisContext; cfg: Config; mailer: Mailer }

export async function notifyRefillFailure(
  s: Deps,
  accountId: string,
  f: { kind: 'declined' | 'authentication_required'; credits: number; card: string; message: string },
): Promise<void> {
  const { email, mref } = await readAccount(s.ctx, accountId, 'email', 'mref')
  if (!email) return
  const links = accountLinks(s, mref ?? '')
  const text =
    f.kind === 'authentication_required'
      ? [
          `Your bank asked to confirm an auto-refill of ${f.credits} credits on your card (${f.card}).`,
          'An automatic refill cannot answer that check, so auto-refill is now turned off and the card is no longer used.',
          '',
          `To turn it back on, open this page and save your card again (your bank may ask you to confirm):`,
          links.enable_auto_refill,
        ]
      : [
          `An auto-refill of ${f.credits} credits on your card (${f.card}) was declined: ${f.message}`,
          'Auto-refill will try again in an hour. To use another card, open:',
          links.enable_auto_refill,
          '',
          `To add credits once instead: ${links.buy_credits}`,
        ]
  s.mailer.send({
    to: email,
    subject: f.kind === 'authentication_required' ? 'Action needed: confirm your card for auto-refill' : 'Auto-refill declined',
    text: text.join('\n'),
  })
}
