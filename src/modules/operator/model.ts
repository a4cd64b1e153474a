import { Type as T } from '@sinclair/typebox'
import { FreeText } from '../../edge/text'

export const OperatorLink = T.Object({
  code: T.String({ description: 'One-time code (10 minutes, single use); never a token' }),
  command: T.String({ description: 'What to send to the bot in the chat: /link <code>' }),
  expires_at: T.String({ format: 'date-time' }),
})

/** The few fields of a Bot API Update the channel reads; everything else is ignored. */
export const TelegramUpdate = T.Object(
  {
    update_id: T.Integer(),
    message: T.Optional(
      T.Object(
        {
          chat: T.Object({ id: T.Integer() }, { additionalProperties: true }),
          from: T.Optional(T.Object({ id: T.Integer() }, { additionalProperties: true })),
          text: T.Optional(FreeText({ maxLength: 4096 })),
        },
        { additionalProperties: true },
      ),
    ),
    callback_query: T.Optional(
      T.Object(
        {
          id: T.String({ maxLength: 64 }),
          from: T.Object({ id: T.Integer() }, { additionalProperties: true }),
          message: T.Optional(
            T.Object(
              { chat: T.Object({ id: T.Integer() }, { additionalProperties: true }), text: T.Optional(FreeText({ maxLength: 4096 })) },
              { additionalProperties: true, description: 'The message the button was under' },
            ),
          ),
          data: T.Optional(T.String({ maxLength: 64 })),
        },
        { additionalProperties: true, description: 'A tap on an inline keyboard button; data is the command it runs' },
      ),
    ),
  },
  { additionalProperties: true, description: 'A Telegram Bot API Update' },
)

export const TelegramAck = T.Object({ ok: T.Boolean() })
