import type { RaisedView } from '../../../governance/raises'
import { esc } from '../../../pages/html'

/** Temporary raises (docs/api.md §13b) as the console shows them: the value in force, until when, and the base it goes back to. */
const when = (iso: string) => `<time datetime="${esc(iso)}">${esc(iso.replace('T', ' ').slice(0, 16))} UTC</time>`
const shown = (v: number | string[] | null) => (v === null ? 'none' : Array.isArray(v) ? (v.length ? v.join(', ') : 'nothing') : v.toLocaleString('en'))

const LABEL = { daily_cap: 'daily cap', allowlist: 'allowlist', budget: 'budget' } as const

/** One line per standing raise, or '' when none. */
export function raisedNote(raised: RaisedView | undefined): string {
  if (!raised) return ''
  return (Object.keys(LABEL) as (keyof RaisedView)[])
    .filter((k) => raised[k])
    .map((k) => `<p class="raised" data-raised="${k}"><small>Temporary: the ${LABEL[k]} is raised until ${when(raised[k]!.until)}, then back to <strong>${esc(shown(raised[k]!.base))}</strong>.</small></p>`)
    .join('\n')
}

/** The durations the console offers an approval (seconds); `''` = as asked (the proposal's own for_s, or for good). */
export const APPROVE_FOR = [
  ['', 'As asked'],
  ['900', '15 minutes'],
  ['3600', '1 hour'],
  ['14400', '4 hours'],
  ['86400', '1 day'],
  ['604800', '7 days'],
  ['2592000', '30 days'],
] as const
