/**
 * Which providers' bills are reconciled (docs/api.md §13d): a provider with a house lane (a house
 * key, not `byok`), a metered dialect whose usage API we read, and its admin key set in
 * `<ID>_ADMIN_KEY` (the id upper-cased, `-` as `_`, as `PROVIDER_<ID>_BASE_URL`).
 */
import type { Catalog } from '../catalog/catalog'
import type { BilledProvider } from './usage-api'

export interface ReconciledProvider extends BilledProvider {
  /** What the provider's calls are filed under: its proxy route and its capabilities. */
  slugs: string[]
  /** The models our metered routes and capabilities price. */
  metered: Set<string>
}

export const adminKeyVariable = (id: string) => `${id.toUpperCase().replace(/-/g, '_')}_ADMIN_KEY`

export function reconciledProviders(catalog: Catalog, env: Record<string, string | undefined>): ReconciledProvider[] {
  const out: ReconciledProvider[] = []
  for (const p of catalog.providers.values()) {
    const adminKey = env[adminKeyVariable(p.id)]
    const dialect = p.proxy?.metered?.dialect
    if (!adminKey || p.byok || !p.houseKey || (dialect !== 'openai' && dialect !== 'anthropic')) continue
    const caps = [...catalog.capabilities.values()].filter((c) => c.provider === p.id)
    const metered = new Set(Object.keys(p.proxy?.metered?.models ?? {}))
    for (const c of caps) {
      const m = catalog.meteredCapability(c)
      for (const model of Object.keys(m?.spec.models ?? {})) metered.add(model)
    }
    out.push({ id: p.id, dialect, baseUrl: p.base_url, adminKey, slugs: [`proxy:${p.id}`, ...caps.map((c) => c.slug)], metered })
  }
  return out.sort((a, b) => a.id.localeCompare(b.id))
}
