/**
 * A provider's usage API, read for one UTC day (docs/api.md §13d): the admin key from
 * `<ID>_ADMIN_KEY`, the base URL the catalog gives the provider (so `PROVIDER_<ID>_BASE_URL` points
 * it at a fake). Anything but a whole, well-formed answer — a refused connection, a timeout, a 429,
 * a 5xx, a 4xx (a revoked admin key), a body that is not the documented shape — is
 * UsageUnavailable: the day is retried later and never raises a drift alarm.
 */
import type { BillTokens } from './tokens'

export class UsageUnavailable extends Error {}

/** A provider whose bill can be read: its dialect picks the usage API. */
export interface BilledProvider {
  id: string
  dialect: 'openai' | 'anthropic'
  baseUrl: string
  adminKey: string
}

/** One UTC day as the APIs take it: [start, end) in Unix seconds. */
export interface UtcDay {
  day: string
  startS: number
  endS: number
}

export function utcDay(day: string): UtcDay {
  const startS = Date.parse(`${day}T00:00:00Z`) / 1000
  return { day, startS, endS: startS + 86_400 }
}

/** The most pages one day's report is read in: a usage API that keeps saying has_more is broken. */
const MAX_PAGES = 100
const TIMEOUT_MS = 15_000

/** GETs one page as JSON; every failure is UsageUnavailable, named for the view. */
export async function getPage(url: string, headers: Record<string, string>): Promise<Record<string, unknown>> {
  let res: Response
  try {
    res = await fetch(url, { headers: { accept: 'application/json', ...headers }, redirect: 'manual', signal: AbortSignal.timeout(TIMEOUT_MS) })
  } catch (e) {
    throw new UsageUnavailable(`network: ${e instanceof Error ? e.message : String(e)}`)
  }
  if (res.status !== 200) {
    await res.body?.cancel().catch(() => {})
    throw new UsageUnavailable(`HTTP ${res.status}`)
  }
  const body = await res.json().catch(() => null)
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new UsageUnavailable('the answer is not a JSON object')
  return body as Record<string, unknown>
}

/** Follows `next_page` while `has_more`, handing each page's `data` buckets to `read`. */
export async function eachPage(first: URL, headers: Record<string, string>, read: (buckets: unknown[]) => void): Promise<void> {
  let page: string | null = null
  for (let i = 0; i < MAX_PAGES; i++) {
    const url = new URL(first)
    if (page !== null) url.searchParams.set('page', page)
    const body = await getPage(url.toString(), headers)
    if (!Array.isArray(body.data)) throw new UsageUnavailable('the answer has no data array')
    read(body.data)
    if (body.has_more !== true) return
    if (typeof body.next_page !== 'string' || body.next_page === '') throw new UsageUnavailable('has_more without a next_page')
    page = body.next_page
  }
  throw new UsageUnavailable(`more than ${MAX_PAGES} pages`)
}

/** A token count field: a non-negative integer, absent or null read as 0; anything else is a malformed answer. */
export function tokenField(result: Record<string, unknown>, name: string): number {
  const v = result[name]
  if (v === undefined || v === null) return 0
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new UsageUnavailable(`${name} is not a token count`)
  return v
}

export const asObject = (v: unknown): Record<string, unknown> | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null)

/** The results of the buckets that start inside the day (a provider may add its neighbours). */
export function resultsOf(buckets: unknown[], inDay: (bucket: Record<string, unknown>) => boolean): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = []
  for (const b of buckets) {
    const bucket = asObject(b)
    if (!bucket || !Array.isArray(bucket.results)) throw new UsageUnavailable('a bucket without results')
    if (!inDay(bucket)) continue
    for (const r of bucket.results) {
      const result = asObject(r)
      if (!result) throw new UsageUnavailable('a result that is not an object')
      out.push(result)
    }
  }
  return out
}

/** A result's model: the API names it when grouped by model; an unnamed one is kept apart, never dropped. */
export const modelOf = (result: Record<string, unknown>): string => (typeof result.model === 'string' && result.model !== '' ? result.model : '(no model)')

export type UsageReader = (p: BilledProvider, day: UtcDay) => Promise<Map<string, BillTokens>>
