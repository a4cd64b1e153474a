/**
 * The overview's 30-day spend chart, drawn as SVG on the server: one bar per day that had spend,
 * a y axis with round ticks, a date under every fifth day, and a <title> per bar (the browser's
 * tooltip, read out by screen readers).
 */
import type { DaySpend } from '../../../account/spend-history'
import { esc } from '../../../pages/html'

const W = 720
const H = 260
const PAD = { left: 56, right: 12, top: 16, bottom: 48 }

/** Tick labels stay short ("20k") so they fit beside the axis at a phone's width. */
const tickLabel = (v: number) => (v >= 10_000 && v % 1000 === 0 ? `${v / 1000}k` : v.toLocaleString('en'))

/** 1, 2 or 5 × 10^n: the smallest such step that splits `max` into at most 4 intervals. */
export function niceStep(max: number): number {
  const raw = Math.max(1, max / 4)
  const pow = 10 ** Math.floor(Math.log10(raw))
  return [1, 2, 5, 10].map((m) => m * pow).find((s) => s >= raw)!
}

export function spendChart(days: DaySpend[]): string {
  const max = Math.max(0, ...days.map((d) => d.credits))
  const step = niceStep(max)
  const top = Math.max(step, Math.ceil(max / step) * step)
  const plotW = W - PAD.left - PAD.right
  const plotH = H - PAD.top - PAD.bottom
  const slot = plotW / days.length
  const y = (v: number) => PAD.top + plotH - (v / top) * plotH
  const ticks: string[] = []
  for (let v = 0; v <= top; v += step)
    ticks.push(`<line class="grid" x1="${PAD.left}" x2="${W - PAD.right}" y1="${y(v)}" y2="${y(v)}"/><text x="${PAD.left - 6}" y="${y(v) + 4}" text-anchor="end">${tickLabel(v)}</text>`)
  const bars: string[] = []
  const labels: string[] = []
  days.forEach((d, i) => {
    const x = PAD.left + i * slot
    if (d.credits > 0) {
      const h = Math.max(1, (d.credits / top) * plotH)
      bars.push(`<rect class="bar" x="${(x + slot * 0.15).toFixed(1)}" y="${(PAD.top + plotH - h).toFixed(1)}" width="${(slot * 0.7).toFixed(1)}" height="${h.toFixed(1)}"><title>${esc(d.day)}: ${d.credits.toLocaleString('en')} credits</title></rect>`)
    }
    if ((days.length - 1 - i) % 5 === 0) {
      // The last label ends at the plot's edge instead of spilling past it.
      const end = i === days.length - 1
      labels.push(`<text x="${(end ? x + slot : x + slot / 2).toFixed(1)}" y="${H - PAD.bottom + 24}" text-anchor="${end ? 'end' : 'middle'}">${esc(d.day.slice(5))}</text>`)
    }
  })
  const total = days.reduce((a, d) => a + d.credits, 0)
  const first = days[0]?.day ?? ''
  const last = days[days.length - 1]?.day ?? ''
  return `<figure>
<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="chart-title" xmlns="http://www.w3.org/2000/svg">
<title id="chart-title">Credits spent per day, ${esc(first)} to ${esc(last)} (HKT days): ${total.toLocaleString('en')} in all</title>
${ticks.join('\n')}
<line class="axis" x1="${PAD.left}" x2="${W - PAD.right}" y1="${y(0)}" y2="${y(0)}"/>
<g class="bars">${bars.join('')}</g>
${labels.join('')}
<text x="${PAD.left}" y="${H - 4}" class="axis-title">day (HKT, month-day)</text>
<text class="axis-title" x="12" y="${PAD.top + plotH / 2}" transform="rotate(-90 12 ${PAD.top + plotH / 2})" text-anchor="middle">credits</text>
</svg>
<figcaption class="muted"><small>Credits spent per HKT day over the last ${days.length} days (debits less refunds): ${total.toLocaleString('en')} in all. From the durable ledger, a few seconds behind.</small></figcaption>
</figure>`
}
