/**
 * What the operator channel sends Telegram is cut to its limits (4096 UTF-16 units a message, 200 a
 * callback notice) without splitting a surrogate pair: sent through BotApi to the fake Bot API, any
 * text arrives as the longest prefix within the limit that ends on a whole character.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import fc from 'fast-check'
import { BotApi } from '../../src/telegram/botapi'
import { startFakeTelegram, type FakeTelegram } from '../fakes/telegram'

let tg: FakeTelegram
let api: BotApi
beforeAll(() => {
  tg = startFakeTelegram()
  api = new BotApi(tg.url, tg.token)
})
afterAll(() => tg.stop())

/** A lone surrogate half anywhere in the text. */
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

test('an emoji across the 4096th unit is left out whole, not cut in half', async () => {
  const text = 'a'.repeat(4095) + '😀' + 'b'
  expect((await api.sendMessage('1', text)).ok).toBe(true)
  expect(tg.sent.at(-1)!.text).toBe('a'.repeat(4095))
})

test('any text: the longest whole-character prefix within the limit', async () => {
  // Long runs of astral characters (emoji, CJK extensions) and BMP ones, around both limits.
  const piece = fc.oneof(fc.constantFrom('😀', '𝔸', '👍🏽', 'é', 'x', '\u4e2d'), fc.string({ unit: 'grapheme', maxLength: 3 }))
  await fc.assert(
    fc.asyncProperty(fc.array(piece, { minLength: 1, maxLength: 2200, size: 'max' }), async (parts) => {
      const text = parts.join('')
      await api.sendMessage('2', text)
      await api.answerCallbackQuery('q', text)
      for (const [sent, max] of [[tg.sent.at(-1)!.text, 4096], [tg.answered.at(-1)!.text, 200]] as const) {
        expect(sent.length).toBeLessThanOrEqual(max)
        expect(text.startsWith(sent)).toBe(true)
        expect(LONE.test(sent)).toBe(false)
        // Longest: one more unit would pass the limit or split a pair.
        if (sent.length < text.length) expect(sent.length === max || (sent.length === max - 1 && /[\ud800-\udbff]/.test(text[max - 1]!))).toBe(true)
      }
    }),
    { numRuns: 60 },
  )
})
