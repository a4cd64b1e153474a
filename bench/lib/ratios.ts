/**
 * The "Ratios" table both benches print: each row's throughput over the ledger floor's (the
 * yardstick: what any Redis-ledger design keeps at the least cost), then the pairs a reader
 * compares (depth-4 / owner, MCP / REST, metered / flat, current / baseline, ...). A pair whose
 * rows did not run reads "n/a" with the reason, so a missing feature is visible, not silent.
 */
export interface RatioPair {
  label: string
  /** req/s of the numerator and denominator rows (NaN when a row did not run). */
  num: number
  den: number
  /** What the ratio should be read against (a target of an issue). */
  note?: string
}

/** The middle value (the mean of the two middle ones for an even count); NaN for none. */
export function median(xs: number[]): number {
  if (!xs.length) return NaN
  const s = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(s.length / 2)
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2
}

export const ratio = (num: number, den: number) => (Number.isFinite(num / den) && den > 0 ? `${(num / den).toFixed(2)}×` : 'n/a')

export function ratioTable(pairs: RatioPair[]): string[] {
  const L = ['| Ratio (throughput) | value | note |', '|---|---:|---|']
  for (const p of pairs) L.push(`| ${p.label} | ${ratio(p.num, p.den)} | ${p.note ?? ''} |`)
  return L
}

/** Every named row over the floor, in the order given; the floor itself and the upstream excluded. */
export function overFloor(rows: { name: string; reqPerSec: number }[], floorName: string, suffix = ''): RatioPair[] {
  const floor = rows.find((r) => r.name === floorName)?.reqPerSec ?? NaN
  return rows.filter((r) => r.name !== floorName && r.name !== 'upstream direct').map((r) => ({ label: `${r.name}${suffix} / ledger floor${suffix}`, num: r.reqPerSec, den: floor }))
}
