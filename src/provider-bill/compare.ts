/**
 * One provider's day, ours beside theirs, model by model (docs/api.md §13d). Pure, so the property
 * tests hold it to its rules:
 * - a kind's drift is |theirs − ours| as a percent of theirs (the bill is the reference; theirs 0
 *   and ours not: 100); a model's `drift_pct` is the largest of its three kinds, to 2 decimals;
 * - `unavailable` when the usage API did not answer (theirs null), whatever ours are;
 * - `unmetered` when the provider bills a model none of our routes meter, we have no tokens for it,
 *   and the house lane carried requests on routes we do not meter that day (the operator opened
 *   them): that usage is the operator's opening, named, not drift;
 * - else `drift` above the threshold, `ok` at or below it.
 */
import { KINDS, noTokens, type BillTokens } from './tokens'

export type RowStatus = 'ok' | 'drift' | 'unavailable' | 'unmetered'

export interface BillRow {
  model: string
  ours: BillTokens
  theirs: BillTokens | null
  driftPct: number | null
  status: RowStatus
}

export interface DayInput {
  ours: Map<string, BillTokens>
  /** null: the usage API was unavailable. */
  theirs: Map<string, BillTokens> | null
  /** Models the provider's metered routes and capabilities price (what we could have counted). */
  metered: ReadonlySet<string>
  unmeteredRequests: number
  thresholdPct: number
}

export function kindDrift(ours: number, theirs: number): number {
  if (theirs === 0) return ours === 0 ? 0 : 100
  return (Math.abs(theirs - ours) / theirs) * 100
}

export function driftPct(ours: BillTokens, theirs: BillTokens): number {
  return Math.round(Math.max(...KINDS.map((k) => kindDrift(ours[k], theirs[k]))) * 100) / 100
}

export function compareDay(d: DayInput): BillRow[] {
  const models = [...new Set([...d.ours.keys(), ...(d.theirs?.keys() ?? [])])].sort()
  return models.map((model) => {
    const ours = d.ours.get(model) ?? noTokens()
    if (d.theirs === null) return { model, ours, theirs: null, driftPct: null, status: 'unavailable' }
    const theirs = d.theirs.get(model) ?? noTokens()
    const drift = driftPct(ours, theirs)
    const opened = !d.metered.has(model) && !d.ours.has(model) && d.unmeteredRequests > 0
    const status = opened ? 'unmetered' : drift > d.thresholdPct ? 'drift' : 'ok'
    return { model, ours, theirs, driftPct: drift, status }
  })
}
