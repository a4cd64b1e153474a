import { Elysia } from 'elysia'
import { bearerAuth, http, type Http } from '../../http'
import type { Services } from '../../services'
import { OperatorLink, TelegramAck, TelegramUpdate, telegramFields } from './model'
import { jsonObjectParser } from '../../edge/body'
import { ApiError } from '../../errors'
import { checkTelegramSecret, operatorLink, telegramUpdate } from '../../telegram/operator'

export const operatorRoutes = (s: Services, h: Http = http(s)) =>
  new Elysia()
    .use(bearerAuth)
    .post(
      '/v1/operator/link',
      async (c) => {
        const principal = await h.admitIn(c)
        const { set } = c
        set.status = 201
        return operatorLink(s, principal.accountId, principal.tokenHash)
      },
      {
        response: { 201: OperatorLink },
        detail: {
          summary:
            'Link a Telegram chat (operator): send the returned /link <code> to the bot; the chat then takes /status, /agents, /kill, /revive, /cap and receives the account events',
        },
      },
    )
    .post('/ops/telegram', ({ body }) => telegramUpdate(s, body), {
      // Before body validation: a caller without the secret learns nothing about the expected shape,
      // and only such callers count against the per-IP limit (Telegram's own updates never do).
      transform: async ({ request, server }) => {
        if (checkTelegramSecret(s, request.headers.get('x-telegram-bot-api-secret-token'))) return
        await h.anonymous(request, server)
        throw new ApiError('UNAUTHORIZED')
      },
      parse: jsonObjectParser(s.cfg.MAX_BODY_BYTES, telegramFields),
      body: TelegramUpdate,
      response: { 200: TelegramAck },
      detail: { summary: 'Telegram Bot API webhook (checked with X-Telegram-Bot-Api-Secret-Token): the operator channel' },
    })
