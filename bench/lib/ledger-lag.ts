/**
 * The service's write-behind lag (GET /status `ledger_lag.entries`: outbox entries not yet in
 * Postgres). A row of a bench that ends with entries still waiting has deferred part of its own
 * work — the flusher's reads and Postgres' inserts — to whatever runs next: the benches read the lag
 * when a row's clock stops and drain it before the next row starts, so that each row pays for its
 * own ledger and for no other's.
 */
export async function ledgerLag(svcUrl: string): Promise<number> {
  const st = (await (await fetch(`${svcUrl}/status`)).json()) as { ledger_lag: { entries: number } }
  return st.ledger_lag.entries
}

/** Waits until nothing is waiting (or the time is up); the entries still waiting then, and how long it took. */
export async function drainLedger(svcUrl: string, timeoutMs = 60_000): Promise<{ lag: number; ms: number }> {
  const t0 = Date.now()
  for (;;) {
    const lag = await ledgerLag(svcUrl)
    if (lag === 0 || Date.now() - t0 > timeoutMs) return { lag, ms: Date.now() - t0 }
    await Bun.sleep(100)
  }
}
