/**
 * A loopback stand-in for the Telegram Bot API: records every sendMessage (chat id and text) sent
 * to /bot<token>/sendMessage and answers like Telegram ({ok: true, result: {...}}). A wrong token
 * gets Telegram's 401. Tests may set `down` to answer 502 for a while.
 */
export interface SentMessage {
  chatId: string
  text: string
  /** The inline keyboard's buttons (reply_markup.inline_keyboard), when the message had one. */
  buttons?: { text: string; callback_data: string }[][]
}

export interface FakeTelegram {
  url: string
  token: string
  sent: SentMessage[]
  /** answerCallbackQuery calls: the tapped query's id and the notice text. */
  answered: { id: string; text: string }[]
  down: boolean
  /** Messages sent to one chat, in order. */
  to(chatId: string | number): string[]
  stop(): void
}

export function startFakeTelegram(token = '123456:TEST-fake-bot-token'): FakeTelegram {
  let messageId = 0
  const fake: FakeTelegram = {
    url: '',
    token,
    sent: [],
    answered: [],
    down: false,
    to: (chatId) => fake.sent.filter((m) => m.chatId === String(chatId)).map((m) => m.text),
    stop: () => server.stop(true),
  }
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(req) {
      const m = /^\/bot([^/]+)\/(\w+)$/.exec(new URL(req.url).pathname)
      if (!m || m[1] !== token) return Response.json({ ok: false, error_code: 401, description: 'Unauthorized' }, { status: 401 })
      if (fake.down) return Response.json({ ok: false, error_code: 502, description: 'Bad Gateway' }, { status: 502 })
      if (m[2] === 'answerCallbackQuery') {
        const q = (await req.json()) as { callback_query_id: string; text?: string }
        fake.answered.push({ id: q.callback_query_id, text: q.text ?? '' })
        return Response.json({ ok: true, result: true })
      }
      if (m[2] !== 'sendMessage') return Response.json({ ok: false, error_code: 404, description: 'Not Found' }, { status: 404 })
      const body = (await req.json()) as { chat_id: string | number; text: string; reply_markup?: { inline_keyboard?: SentMessage['buttons'] } }
      fake.sent.push({ chatId: String(body.chat_id), text: body.text, ...(body.reply_markup?.inline_keyboard ? { buttons: body.reply_markup.inline_keyboard } : {}) })
      return Response.json({ ok: true, result: { message_id: ++messageId, chat: { id: Number(body.chat_id) }, date: Math.floor(Date.now() / 1000), text: body.text } })
    },
  })
  fake.url = `http://127.0.0.1:${server.port}`
  return fake
}

let updateSeq = 1000

/** A Bot API Update carrying one text message from `userId` in `chatId`. */
export function textUpdate(chatId: number, userId: number, text: string) {
  return {
    update_id: ++updateSeq,
    message: { message_id: updateSeq, date: Math.floor(Date.now() / 1000), chat: { id: chatId, type: 'private' }, from: { id: userId, is_bot: false, first_name: 'Op' }, text },
  }
}

/** A Bot API Update for a tap by `userId` on an inline button carrying `data`, under a message in `chatId`. */
export function tapUpdate(chatId: number, userId: number, data: string) {
  return {
    update_id: ++updateSeq,
    callback_query: {
      id: `cbq${updateSeq}`,
      from: { id: userId, is_bot: false, first_name: 'Op' },
      message: { message_id: updateSeq, date: Math.floor(Date.now() / 1000), chat: { id: chatId, type: 'private' }, text: 'a proposal' },
      chat_instance: '1',
      data,
    },
  }
}
