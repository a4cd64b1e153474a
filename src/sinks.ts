/**
 * Every outbox entry kind and the domain that writes it to Postgres: the composition root's list,
 * registered with the write-behind by buildServices (write-behind/sink-registry.ts). A kind missing
 * here is dead-lettered by the flusher, never acked unwritten.
 */
import { eventSink } from './events/sink'
import { accountPolicySink, agentSink } from './governance/sink'
import { LEDGER_SINKS } from './ledger/sinks'
import { mandateSink, parkedSink } from './payments/sink'
import { proposalSink } from './proposals/sink'
import type { Sink } from './write-behind/outbox'

export const SINKS: Readonly<Record<string, Sink>> = {
  ...LEDGER_SINKS,
  agent: agentSink,
  account_policy: accountPolicySink,
  mandate: mandateSink,
  parked: parkedSink,
  event: eventSink,
  proposal: proposalSink,
}
