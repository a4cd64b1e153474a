import { Type as T, type TSchema } from '@sinclair/typebox'
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
          sender_chat: T.Optional(T.Object({ id: T.Integer() }, { additionalProperties: true, description: 'Sent as this chat (a channel, an anonymous admin): no person is known' })),
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

/** `v` cut to the members `schema` names, object by object; what is not an object is left for the schema to refuse. */
function pick(v: unknown, schema: TSchema): unknown {
  const props = (schema as { properties?: Record<string, TSchema> }).properties
  if (!props || !v || typeof v !== 'object' || Array.isArray(v)) return v
  const o = v as Record<string, unknown>
  const out: Record<string, unknown> = {}
  for (const [k, sub] of Object.entries(props)) if (Object.hasOwn(o, k)) out[k] = pick(o[k], sub)
  return out
}

/**
 * An Update cut down to what the channel reads (the members TelegramUpdate names), before the
 * schema and the edge see it. The rest is
 * Telegram's document, not the operator's words: a quoted reply or an edit carries the bot's own
 * multi-line text, a name may hold anything, and refusing them (a 4xx) only made Telegram redeliver
 * an update the channel would have ignored or acted on.
 */
export const telegramFields = (update: Record<string, unknown>) => pick(update, TelegramUpdate) as Record<string, unknown>
