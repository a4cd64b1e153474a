/** The answer of GET /v1/search (and the MCP tool search_capabilities): ranked matches with their state. */
import type { Catalog } from './catalog'

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
      ...(c.demo ? { demo: true as const } : {}),
    })),
  }
}
