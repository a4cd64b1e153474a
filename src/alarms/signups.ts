/**
 * The trial-abuse alarm on signups (docs/api.md §6 Alarms). One script counts, checks and pauses, so
 * concurrent signups on any number of instances cannot slip past the alarm.
 * errors: SIGNUPS_PAUSED.
 */
import { ApiError } from '../errors'
import type { RedisContext } from '../redis/context'
import { runSignupGate } from '../lua/admission'

/** Admits one signup into the last hour's count, or refuses it (pausing signups if it tripped). */
export async function admitSignup(ctx: RedisContext, accountId: string): Promise<void> {
  const reply = await runSignupGate(ctx, { now: ctx.clock.now(), perHour: ctx.cfg.SIGNUP_ALARM_PER_HOUR, accountId })
  if (reply.status === 'signups_paused') throw new ApiError('SIGNUPS_PAUSED')
}

/** A signup that failed after admission (e-mail taken, ...) does not count towards the alarm. */
export async function releaseSignup(ctx: RedisContext, accountId: string): Promise<void> {
  await ctx.redis.zrem(ctx.keys.signupsRecent(), accountId)
}

/** Founder resume: signups open again and the alarm counts afresh from now. */
export async function resumeSignups(ctx: RedisContext): Promise<void> {
  const { keys } = ctx
  await ctx.redis.multi().del(keys.signupsPaused()).del(keys.signupsRecent()).exec()
}

export async function signupsPaused(ctx: RedisContext): Promise<boolean> {
  return (await ctx.redis.exists(ctx.keys.signupsPaused())) === 1
}
