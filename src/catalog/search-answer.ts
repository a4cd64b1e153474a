/** The answer of GET /v1/search (and the MCP tool search_capabilities): ranked matches with their state. */
import type { Capability, Catalog } from './catalog'

export function searchAnswer(catalog: Catalog, q: string) {
  return {
    query: q,
    results: catalog.search(q).map((c) => ({
      slug: c.slug,
      lane: c.lane,
      price: c.price,
      params: c.params,
      provider: c.provider,
      description: c.description,
      status: catalog.state(c),
      ...meteredPrices(catalog, c),
      ...(c.demo ? { demo: true as const } : {}),
    })),
  }
}

/**
 * A metered capability's token prices (docs/api.md §7), the ones its call is charged by: the same
 * spec the debit reads, so what search shows is what POST /v1/call debits (its flat `price` is 0).
 */
function meteredPrices(catalog: Catalog, c: Capability) {
  const m = catalog.meteredCapability(c)
  if (!m) return {}
  return { metered: { dialect: m.spec.dialect, unit: 'credits per 1,000,000 tokens' as const, min_output: m.spec.min_output, models: m.spec.models } }
}
