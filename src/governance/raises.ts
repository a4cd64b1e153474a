/**
 * Temporary raises as the views show them (docs/api.md §13b). An approval for a time keeps, in the
 * policy's own hash, the raised field's base and when it lapses (`raises`, lua/lib/raises.lua); the
 * debit reads the base from the lapse on, with no writer. A view does the same: a lapsed raise shows
 * its base and is not listed; a standing one shows the raised value and, under `raised`, `until`
 * and what it goes back to.
 */
import { decodeAllowlist } from './allowlist'

/** A hash field that can be raised for a time. */
type RaisedField = 'daily_cap' | 'allow' | 'budget'

interface StoredRaise {
  value: string
  /** Absent: the field was absent (no limit, or the default). */
  base?: string
  /** Epoch ms. */
  lapses: number
}

/** One standing raise: the value in force until `until`, then `base`. */
export interface RaiseView<V> {
  until: string
  base: V
}

/** Standing raises by the view's field name (`allowlist` for the hash's `allow`). */
export interface RaisedView {
  daily_cap?: RaiseView<number | null>
  allowlist?: RaiseView<string[] | null>
  budget?: RaiseView<number | null>
}

const optNum = (v: string | null | undefined) => (v === null || v === undefined ? null : Number(v))

/** The hash's policy fields as of `now`, and the raises still standing (null when none). */
export function applyRaises(
  raw: string | null | undefined,
  now: number,
  fields: Partial<Record<RaisedField, string | null | undefined>>,
): { fields: Partial<Record<RaisedField, string | null>>; raised: RaisedView | null } {
  const out: Partial<Record<RaisedField, string | null>> = { ...fields }
  if (!raw) return { fields: out, raised: null }
  const raised: RaisedView = {}
  for (const [field, x] of Object.entries(JSON.parse(raw) as Record<RaisedField, StoredRaise>) as [RaisedField, StoredRaise][]) {
    if (!(field in fields)) continue
    if (now >= x.lapses) {
      out[field] = x.base ?? null
      continue
    }
    out[field] = x.value
    const until = new Date(x.lapses).toISOString()
    if (field === 'allow') raised.allowlist = { until, base: decodeAllowlist(x.base ?? null) }
    else raised[field] = { until, base: optNum(x.base) }
  }
  return { fields: out, raised: Object.keys(raised).length > 0 ? raised : null }
}
