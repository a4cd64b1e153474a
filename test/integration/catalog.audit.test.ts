/**
 * A malformed catalog stops the boot with the offending path and a reason, rather than serving a
 * price it never charges or a metered route that refuses every model.
 */
import { describe, expect, test } from 'bun:test'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Catalog, CatalogError } from '../../src/catalog/catalog'

const dir = mkdtempSync(join(tmpdir(), 'pab-catalog-'))
let n = 0
const load = (file: unknown) => {
  const f = join(dir, `${n++}.json`)
  writeFileSync(f, JSON.stringify(file))
  return Catalog.load(f, {})
}
const provider = { base_url: 'http://127.0.0.1:1', auth: { header: 'x-api-key' } }
const model = { input: 150, output: 600, max_output: 4096 }
const metered = (models: Record<string, unknown>) => ({ dialect: 'openai', routes: ['/v1/chat/completions'], min_output: 16, models })
const cap = (o: Record<string, unknown>) => ({ slug: 'llm.chat', provider: 'p', lane: 'house', price: 0, method: 'POST', path: '/v1/chat/completions', params: {}, ...o })

describe('the catalog loader', () => {
  test('refuses a metered capability with a flat price: search would show it, the call never debits it', () => {
    const own = { providers: { p: provider }, capabilities: [cap({ price: 10, metered: metered({ m: model }) })] }
    expect(() => load(own)).toThrow(CatalogError)
    expect(() => load(own)).toThrow(/\/capabilities\/0\/price: a metered capability is charged by its tokens/)
    const borrowed = { providers: { p: { ...provider, proxy: { price: 0, paths: ['/v1/'], metered: metered({ m: model }) } } }, capabilities: [cap({ price: 10, metered: true })] }
    expect(() => load(borrowed)).toThrow(/\/capabilities\/0\/price/)
    expect(load({ ...borrowed, capabilities: [cap({ metered: true })] }).capabilities.get('llm.chat')!.price).toBe(0)
  })

  test('refuses a metered route or capability with no priced model (every request on it would be refused)', () => {
    expect(() => load({ providers: { p: { ...provider, proxy: { price: 0, paths: ['/v1/'], metered: metered({}) } } }, capabilities: [] })).toThrow(/\/providers\/p\/proxy\/metered\/models/)
    expect(() => load({ providers: { p: provider }, capabilities: [cap({ metered: metered({}) })] })).toThrow(/\/capabilities\/0\/metered/)
  })

  test('the shipped catalog passes those rules: its metered capabilities are priced by their tokens only', () => {
    const c = Catalog.load(undefined, {})
    const meteredCaps = [...c.capabilities.values()].filter((x) => x.metered)
    expect(meteredCaps.map((x) => x.slug)).toContain('llm.openai.chat')
    for (const x of meteredCaps) expect({ slug: x.slug, price: x.price }).toEqual({ slug: x.slug, price: 0 })
  })
})
