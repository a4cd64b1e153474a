/**
 * After the load: is the ledger exact? Three independent views of the paid calls must agree:
 *   Redis    funded balance − final balance = price × charged calls: the successful ones (the
 *            service's own count, the public `organic_calls_routed` counter) plus the ones whose
 *            client went away mid-call, which are charged too (`client_closed`: the provider had
 *            started the work) but counted by no public counter — at most the requests autocannon
 *            drops in flight, and exactly the `client_closed` rows in Postgres;
 *   Postgres after the flusher drained: Σ debit/refund entries = the same credits, one debit row per
 *            successful call, one `ok` row per call in `calls`;
 *   client   autocannon's 2xx count, which can be short by up to `connections` per run: when a run's
 *            clock stops, autocannon drops its in-flight requests, which the service still completes
 *            and charges (correctly: the upstream answered).
 */
import postgres from 'postgres'
import type { BenchService } from './service'
import { drainLedger } from './ledger-lag'

export interface LedgerCheck {
  funded: number
  final: number
  spent: number
  price: number
  serverOk: number
  /** Charged calls that did not end `ok` (client_closed when autocannon stops): spent / price − serverOk. */
  otherCharged: number
  clientOk: number
  maxInFlightDropped: number
  redisExact: boolean
  clientConsistent: boolean
  pg: null | { debits: number; refunds: number; sum: number; callsOk: number; callsOtherCharged: number; exact: boolean; lagEntries: number }
  exact: boolean
}

async function json<T>(url: string): Promise<T> {
  return (await (await fetch(url)).json()) as T
}

/** Waits until the service's counters stop moving (fire-and-forget call records of dropped requests). */
async function settledCount(svcUrl: string): Promise<number> {
  let last = -1
  for (let i = 0; i < 50; i++) {
    const { organic_calls_routed: n } = await json<{ organic_calls_routed: number }>(`${svcUrl}/v1/public-stats`)
    if (n === last) return n
    last = n
    await Bun.sleep(200)
  }
  return last
}

export async function checkLedger(
  svc: BenchService,
  a: { accountId: string; funded: number; price: number; clientOk: number; maxInFlightDropped: number },
): Promise<LedgerCheck> {
  const serverOk = await settledCount(svc.url)
  const final = await svc.balance(a.accountId)
  const spent = a.funded - final
  const otherCharged = spent / a.price - serverOk
  const redisExact = Number.isInteger(otherCharged) && otherCharged >= 0 && otherCharged <= a.maxInFlightDropped && final >= 0
  const clientConsistent = a.clientOk <= serverOk && serverOk + otherCharged <= a.clientOk + a.maxInFlightDropped
  let pg: LedgerCheck['pg'] = null
  if (svc.dbUrl && svc.flusher) {
    const lagEntries = (await drainLedger(svc.url)).lag
    const sql = postgres(svc.dbUrl, { max: 1, onnotice: () => {} })
    try {
      const [m] = await sql<{ debits: string; refunds: string; sum: string | null }[]>`
        select count(*) filter (where kind = 'debit') as debits,
               count(*) filter (where kind = 'refund') as refunds,
               sum(amount) filter (where kind in ('debit', 'refund')) as sum
        from ledger_entries where account_id = ${a.accountId}`
      // The charged endings of the settlement table (src/paid-request/outcome.ts) other than ok.
      const [c] = await sql<{ ok: string; other: string }[]>`
        select count(*) filter (where outcome = 'ok') as ok,
               count(*) filter (where outcome in ('client_closed', 'provider_4xx')) as other
        from calls where account_id = ${a.accountId}`
      const debits = Number(m!.debits)
      const refunds = Number(m!.refunds)
      const sum = Number(m!.sum ?? 0)
      const callsOk = Number(c!.ok)
      const callsOtherCharged = Number(c!.other)
      const exact = lagEntries === 0 && -sum === spent && debits - refunds === serverOk + otherCharged && callsOk === serverOk && callsOtherCharged === otherCharged
      pg = { debits, refunds, sum, callsOk, callsOtherCharged, lagEntries, exact }
    } finally {
      await sql.end()
    }
  }
  return {
    funded: a.funded,
    final,
    spent,
    price: a.price,
    serverOk,
    otherCharged,
    clientOk: a.clientOk,
    maxInFlightDropped: a.maxInFlightDropped,
    redisExact,
    clientConsistent,
    pg,
    exact: redisExact && clientConsistent && (pg?.exact ?? true),
  }
}
