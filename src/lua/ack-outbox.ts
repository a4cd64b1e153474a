/** ack-outbox.lua: acks a committed batch and trims what every consumer is done with (see its Lua header). */
import { ScriptStatus as S } from '../redis/codes'
import type { RedisContext } from '../redis/context'
import { num, statusOf, unexpected } from './reply'

export interface AckOutboxReply {
  acked: number
  /** Entries taken out of the stream: may differ from `acked` while another consumer holds older ones. */
  trimmed: number
}

export async function runAckOutbox(ctx: Pick<RedisContext, 'scripts'>, a: { stream: string; group: string; ids: string[] }): Promise<AckOutboxReply> {
  const reply = await ctx.scripts.ackOutbox([a.stream], [a.group, ...a.ids])
  if (statusOf(reply) !== S.OK) throw unexpected('ack-outbox.lua', reply)
  return { acked: num(reply, 1), trimmed: num(reply, 2) }
}
