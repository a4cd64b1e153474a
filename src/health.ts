/**
 * Why the service is degraded, in one place. Any part of the process may hold a named reason
 * (`set`) or register a check that /status runs (`probe`); `/status` answers `degraded` and lists the
 * reasons whenever one is present. Parts never write /status themselves, so they cannot disagree.
 */
export interface DegradedReason {
  /** Stable key, e.g. `ledger_lag`, `dead_letters`, `redis_empty`, `not_configured:vault`. */
  reason: string
  /** One line for a person: what is wrong and what clears it. */
  detail: string
}

export type HealthProbe = () => Promise<DegradedReason | DegradedReason[] | null>

export class Health {
  private held = new Map<string, string>()
  private probes: HealthProbe[] = []

  /** Holds (detail given) or clears (null) a reason. */
  set(reason: string, detail: string | null): void {
    if (detail === null) this.held.delete(reason)
    else this.held.set(reason, detail)
  }

  has(reason: string): boolean {
    return this.held.has(reason)
  }

  /** A check run on every /status; it returns the reasons it finds, or null. */
  probe(p: HealthProbe): void {
    this.probes.push(p)
  }

  /** Every reason held now plus what the probes find (a probe that throws is skipped). */
  async reasons(): Promise<DegradedReason[]> {
    const out: DegradedReason[] = [...this.held].map(([reason, detail]) => ({ reason, detail }))
    const found = await Promise.all(this.probes.map((p) => p().catch(() => null)))
    for (const f of found) if (f) out.push(...(Array.isArray(f) ? f : [f]))
    return out
  }
}
