/**
 * dead-letter.lua and replay-dead-letter.lua: an outbox entry moves to its shard's dead-letter stream
 * and back, each in one step (see their Lua headers). These two answer {1, id} | {0, ''}, not a
 * ScriptStatus: they decide nothing about money.
 */
import type { Shard } from '../redis/keys'
import type { RedisContext } from '../redis/context'
import { str } from './reply'

export type DeadLetterReply = { status: 'moved'; deadLetterId: string } | { status: 'gone' }

export async function runDeadLetter(ctx: RedisContext, a: { shard: Shard; group: string; streamId: string; error: string; now: number }): Promise<DeadLetterReply> {
  const reply = await ctx.scripts.deadLetter([ctx.keys.outbox(a.shard), ctx.keys.deadLetters(a.shard)], [a.group, a.streamId, a.error, a.now])
  return Number(reply[0]) === 1 ? { status: 'moved', deadLetterId: str(reply, 1) } : { status: 'gone' }
}

export type ReplayDeadLetterReply = { status: 'replayed'; outboxId: string } | { status: 'not_found' }

export async function runReplayDeadLetter(ctx: RedisContext, a: { shard: Shard; streamId: string }): Promise<ReplayDeadLetterReply> {
  const reply = await ctx.scripts.replayDeadLetter([ctx.keys.deadLetters(a.shard), ctx.keys.outbox(a.shard)], [a.streamId])
  return Number(reply[0]) === 1 ? { status: 'replayed', outboxId: str(reply, 1) } : { status: 'not_found' }
}
