/**
 * Where the write-behind finds the Postgres writer of each outbox entry kind. The stage owns the
 * contract (the Sink type, outbox.ts) but knows no domain: the composition root (src/sinks.ts,
 * registered by buildServices) hands it every domain's sinks, so nothing in the core imports them all.
 */
import type { Sink } from './outbox'

const sinks = new Map<string, Sink>()

/** Adds (or replaces) the writers of these kinds; idempotent, so every app built in a process may call it. */
export function registerSinks(byKind: Readonly<Record<string, Sink>>): void {
  for (const [kind, sink] of Object.entries(byKind)) sinks.set(kind, sink)
}

/** The writer of a kind, or undefined (a Map: a kind named `constructor` finds nothing, not Object.prototype's). */
export function sinkOf(kind: string): Sink | undefined {
  return sinks.get(kind)
}
