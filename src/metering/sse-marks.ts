/**
 * The bytes the meters look for in a provider's answer without decoding it: UTF-8 never puts an
 * ASCII byte inside a character, so each is found by a byte search.
 */
export const bytes = (s: string) => Buffer.from(s, 'latin1')
/** Every API's usage sits under this key (or one spelt with a \u escape: ESCAPE). */
export const USAGE_KEY = bytes('"usage"')
export const ESCAPE = bytes('\\u')
/** Anthropic's message_start resets the input side even without a usage key. */
export const MESSAGE_START = bytes('message_start')
export const LF = 0x0a
export const CR = 0x0d
