/**
 * After the scale bench's load: is each service's ledger exact? Counted from the stores, not from
 * the public counters, because a proxied request whose client went away mid-answer is charged
 * (its upstream answered) yet is not an "organic" call:
 *   Redis     funded − final balance = the credits of the charged requests;
 *   Postgres  after the drain, Σ of the debit and refund entries is the same number, debits −
 *             refunds = the requests that kept their charge = the call rows that did;
 *   client    its 2xx count ≤ the charged requests ≤ 2xx + the requests dropped in flight.
 */
import postgres from 'postgres'
import type { BenchService } from './service'
import { drainLedger } from './ledger-lag'

export interface ScaleLedger {
  funded: number
  final: number
  spent: number
  price: number
  debits: number
  refunds: number
  entriesSum: number
  callsCharged: number
  clientOk: number
  maxInFlightDropped: number
  lag: number
  exact: boolean
}

export async function checkScaleLedger(svc: BenchService, a: { accountId: string; funded: number; price: number; clientOk: number; maxInFlightDropped: number }): Promise<ScaleLedger> {
  // Call records of requests cut off at a run's end are filed just after: let them land.
  await Bun.sleep(500)
  const lag = (await drainLedger(svc.url, 120_000)).lag
  const final = await svc.balance(a.accountId)
  const sql = postgres(svc.dbUrl!, { max: 1, onnotice: () => {} })
  try {
    const [m] = await sql<{ debits: string; refunds: string; sum: string | null }[]>`
      select count(*) filter (where kind = 'debit') as debits, count(*) filter (where kind = 'refund') as refunds,
             sum(amount) filter (where kind in ('debit', 'refund')) as sum
      from ledger_entries where account_id = ${a.accountId}`
    const [c] = await sql<{ n: string }[]>`select count(*) as n from calls where account_id = ${a.accountId} and refunded = 0 and charged > 0`
    const debits = Number(m!.debits)
    const refunds = Number(m!.refunds)
    const entriesSum = Number(m!.sum ?? 0)
    const callsCharged = Number(c!.n)
    const spent = a.funded - final
    const kept = debits - refunds
    const exact =
      lag === 0 &&
      final >= 0 &&
      spent === -entriesSum &&
      spent === a.price * kept &&
      callsCharged === kept &&
      a.clientOk <= kept &&
      kept <= a.clientOk + a.maxInFlightDropped
    return { funded: a.funded, final, spent, price: a.price, debits, refunds, entriesSum, callsCharged, clientOk: a.clientOk, maxInFlightDropped: a.maxInFlightDropped, lag, exact }
  } finally {
    await sql.end()
  }
}
