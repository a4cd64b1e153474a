/**
 * ioredis traces every command through `diagnostics_channel` unless the channel says it has no
 * subscribers (`tracingChannel.hasSubscribers === false`). Bun's TracingChannel has no such
 * property, so under Bun ioredis builds a trace context (with a sanitised copy of the arguments)
 * and wraps a promise for every command nobody listens to: about 1.3–2.4 µs of CPU per command,
 * measured A/B with 200k auto-pipelined EVALSHA calls (docs/decisions.md). This gives Bun's
 * TracingChannel the getter Node has: true when any of its five channels has a subscriber, so a
 * real subscriber (an APM agent) still gets its traces.
 */
import dc from 'node:diagnostics_channel'

const PHASES = ['start', 'end', 'asyncStart', 'asyncEnd', 'error'] as const

export function giveTracingChannelsHasSubscribers(): void {
  if (typeof dc.tracingChannel !== 'function') return
  const proto = Object.getPrototypeOf(dc.tracingChannel('pab:probe')) as object
  if ('hasSubscribers' in proto) return
  Object.defineProperty(proto, 'hasSubscribers', {
    configurable: true,
    get(this: Record<(typeof PHASES)[number], { hasSubscribers?: boolean } | undefined>) {
      return PHASES.some((p) => this[p]?.hasSubscribers === true)
    },
  })
}

giveTracingChannelsHasSubscribers()
