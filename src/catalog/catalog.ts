/**
 * The capability catalog: loaded and validated once at boot (a bad file stops the boot with the
 * offending path), searched, and consulted on every call. Pause state lives in Redis (shared by all
 * instances) and is mirrored here, refreshed every second and at once on this instance's changes.
 * errors: UNKNOWN_API, API_PAUSED, API_UNAVAILABLE, BAD_REQUEST (params).
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Value } from '@sinclair/typebox/value'
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv'
import { ApiError } from '../errors'
import { CatalogFileSchema, type CapabilitySpec, type CatalogFile, type MeteredSpec, type ProviderSpec } from './schema'
import { apiKindOf, type ApiKind } from './api-kind'
import { parseAllowEntry } from './house-paths'

/** A metered route or capability: its prices and which API it speaks (docs/api.md §7). */
export interface Metering {
  spec: MeteredSpec
  kind: ApiKind
}

export const DEFAULT_CATALOG = join(import.meta.dir, '..', '..', 'catalog.json')

export interface Provider extends ProviderSpec {
  id: string
  /** The house key from `key_env`, when the deployment has one. */
  houseKey: string | null
}

export interface Capability extends CapabilitySpec {
  validate: ValidateFunction
  /** From the built-in demo provider (DEMO_PROVIDER), not from the catalog file: listed as demo. */
  demo: boolean
}

export type CapabilityState = 'live' | 'paused' | 'unavailable'

export class CatalogError extends Error {}

export class Catalog {
  readonly providers = new Map<string, Provider>()
  readonly capabilities = new Map<string, Capability>()
  private paused = new Set<string>()

  /** `demo`: the built-in demo provider's entries, added after the file's and marked demo. */
  constructor(file: CatalogFile, env: Record<string, string | undefined>, demo?: CatalogFile) {
    const ajv = new Ajv({ allErrors: false, strict: false })
    for (const [id, spec] of Object.entries(file.providers)) {
      const override = env[`PROVIDER_${id.toUpperCase().replace(/-/g, '_')}_BASE_URL`]
      this.providers.set(id, {
        ...spec,
        id,
        base_url: (override || spec.base_url).replace(/\/$/, ''),
        houseKey: spec.key_env ? env[spec.key_env] || null : null,
      })
    }
    for (const [id, spec] of Object.entries(file.providers)) checkPrices(`/providers/${id}/proxy/metered`, spec.proxy?.metered)
    for (const [id, spec] of Object.entries(file.providers)) checkHouse(`/providers/${id}/proxy/house`, spec.proxy)
    for (const [id, spec] of Object.entries(demo?.providers ?? {})) {
      if (this.providers.has(id)) throw new CatalogError(`/providers/${id}: the id is taken by the built-in demo provider (set DEMO_PROVIDER=off)`)
      // The demo provider is this service itself and takes no key; a marker keeps its house lane live.
      // Random, because answers are masked for the house key: a word like "demo" would be starred out.
      this.providers.set(id, { ...spec, id, base_url: spec.base_url.replace(/\/$/, ''), houseKey: `demo-${randomBytes(18).toString('base64url')}` })
    }
    const add = (where: string, isDemo: boolean) => (cap: CapabilitySpec, i: number) => {
      if (!this.providers.has(cap.provider)) throw new CatalogError(`${where}/${i}/provider: unknown provider "${cap.provider}"`)
      if (this.capabilities.has(cap.slug)) throw new CatalogError(`${where}/${i}/slug: duplicate slug "${cap.slug}"`)
      let validate: ValidateFunction
      try {
        validate = ajv.compile(cap.params)
      } catch (e) {
        throw new CatalogError(`${where}/${i}/params: not a valid JSON Schema (${(e as Error).message})`)
      }
      if (cap.metered !== true) checkPrices(`${where}/${i}/metered`, cap.metered)
      if (cap.metered === true && !this.providers.get(cap.provider)!.proxy?.metered)
        throw new CatalogError(`${where}/${i}/metered: true needs the provider's proxy.metered prices`)
      // The call debits a metered capability by its tokens only: a flat price beside them would be shown and never charged.
      if (cap.metered && cap.price !== 0) throw new CatalogError(`${where}/${i}/price: a metered capability is charged by its tokens (credits per 1,000,000); its price must be 0`)
      if (cap.metered && cap.method !== 'POST') throw new CatalogError(`${where}/${i}/metered: a metered capability is a POST`)
      this.capabilities.set(cap.slug, { ...cap, validate, demo: isDemo })
    }
    file.capabilities.forEach(add('/capabilities', false))
    demo?.capabilities.forEach(add('demo /capabilities', true))
  }

  /** `demo`: the built-in demo provider's catalog (validated like a file), or undefined when it is off. */
  static load(path: string | undefined, env: Record<string, string | undefined>, demo?: unknown): Catalog {
    const file = path ?? DEFAULT_CATALOG
    let raw: unknown
    try {
      raw = JSON.parse(readFileSync(file, 'utf8'))
    } catch (e) {
      throw new CatalogError(`${file}: ${(e as Error).message}`)
    }
    return new Catalog(validFile(file, raw), env, demo === undefined ? undefined : validFile('demo provider', demo))
  }

  state(cap: Capability): CapabilityState {
    if (this.paused.has(cap.slug)) return 'paused'
    const provider = this.providers.get(cap.provider)!
    if (cap.lane === 'house' && !provider.houseKey) return 'unavailable'
    return 'live'
  }

  /** The capability behind a slug, live, or the error that explains why not. */
  require(slug: string): Capability {
    const cap = this.capabilities.get(slug)
    if (!cap) throw new ApiError('UNKNOWN_API', { slug, search_url: `/v1/search?q=${encodeURIComponent(slug)}` })
    const state = this.state(cap)
    if (state === 'paused') throw new ApiError('API_PAUSED', { slug, status_url: '/status' })
    if (state === 'unavailable') throw new ApiError('API_UNAVAILABLE', { slug, capabilities_url: '/capabilities' })
    return cap
  }

  /** The metering of a proxied path: set when the provider meters it, else the route is flat-priced. */
  meteredRoute(provider: Provider, decodedPath: string): Metering | null {
    const spec = provider.proxy?.metered
    // A trailing slash routes to the same endpoint on most upstreams: it must not make a route flat.
    const path = decodedPath.replace(/\/+$/, '')
    if (!spec || !(spec.routes ?? []).some((r) => path.endsWith(r))) return null
    return { spec, kind: apiKindOf(spec.dialect, path) }
  }

  /**
   * Each proxy route whose `house.allow` opens a path at price 0 on a provider with a house key
   * variable: served to every signup for nothing but the request cap (docs/house-lane.md).
   */
  unpricedHouseOpenings(): { provider: string; allow: string[]; price: 0 }[] {
    const out: { provider: string; allow: string[]; price: 0 }[] = []
    for (const p of this.providers.values()) {
      const allow = p.proxy?.house?.allow ?? []
      if (p.proxy && p.proxy.price === 0 && !p.byok && p.key_env && allow.length) out.push({ provider: p.id, allow, price: 0 })
    }
    return out
  }

  /** The metering of a capability (`metered: true` borrows its provider's proxy prices). */
  meteredCapability(cap: Capability): Metering | null {
    if (!cap.metered) return null
    const spec = cap.metered === true ? this.providers.get(cap.provider)!.proxy!.metered! : cap.metered
    return { spec, kind: apiKindOf(spec.dialect, cap.path) }
  }

  /** Validates a call body against the capability's params schema. */
  checkParams(cap: Capability, body: unknown): void {
    if (cap.validate(body)) return
    throw paramsError(cap.validate.errors?.[0])
  }

  /** Ranked by where the words match: slug first, then description. */
  search(q: string): Capability[] {
    // NFKC then lower case: a full-width or decomposed query matches the catalog's plain text.
    const fold = (s: string) => s.normalize('NFKC').toLowerCase()
    const words = fold(q).split(/[\s,]+/).filter(Boolean)
    const scored: [number, Capability][] = []
    for (const cap of this.capabilities.values()) {
      const slug = cap.slug
      const text = fold(`${cap.description} ${cap.provider} ${cap.lane}`)
      let score = 0
      for (const w of words) {
        if (slug === w) score += 10
        else if (slug.split(/[._-]/).includes(w)) score += 6
        else if (slug.includes(w)) score += 4
        if (text.includes(w)) score += 1
      }
      if (score > 0) scored.push([score, cap])
    }
    return scored.sort((a, b) => b[0] - a[0] || a[1].slug.localeCompare(b[1].slug)).map(([, c]) => c)
  }

  setPaused(slugs: Iterable<string>): void {
    this.paused = new Set(slugs)
  }

  pausedSlugs(): string[] {
    return [...this.paused].sort()
  }

  byState(): Record<CapabilityState, string[]> {
    const out: Record<CapabilityState, string[]> = { live: [], paused: [], unavailable: [] }
    for (const cap of this.capabilities.values()) out[this.state(cap)].push(cap.slug)
    return out
  }

  /** Slugs of the built-in demo provider (empty when DEMO_PROVIDER leaves it off). */
  demoSlugs(): string[] {
    return [...this.capabilities.values()].filter((c) => c.demo).map((c) => c.slug)
  }
}

/** A cached token priced above an input one would escape the reservation, which bounds input × input price. */
function checkPrices(where: string, spec: MeteredSpec | undefined): void {
  for (const [model, p] of Object.entries(spec?.models ?? {}))
    if (p.cached_input !== undefined && p.cached_input > p.input) throw new CatalogError(`${where}/models/${model}/cached_input: above input (the reservation bounds input tokens at the input price)`)
}

/**
 * A `house` block's prefixes lie under the route's `paths` (else they open nothing) and hold no
 * spelling the proxy refuses (`//`, `.` or `..` segments): an entry that can never match is a typo.
 */
function checkHouse(where: string, proxy: ProviderSpec['proxy']): void {
  const house = proxy?.house
  if (!house) return
  const check = (field: string, entries: string[]) =>
    entries.forEach((entry, i) => {
      const prefix = parseAllowEntry(entry).prefix
      if (prefix.includes('//') || /(^|\/)\.\.?(\/|$)/.test(prefix)) throw new CatalogError(`${where}/${field}/${i}: "${entry}" holds "//" or a dot segment, which the proxy refuses`)
      if (!proxy.paths.some((p) => prefix.startsWith(p) || `${prefix}/`.startsWith(p)))
        throw new CatalogError(`${where}/${field}/${i}: "${entry}" is not under the route's paths (${proxy.paths.join(', ')})`)
    })
  check('allow', house.allow ?? [])
  check('owned', house.owned ?? [])
}

function validFile(name: string, raw: unknown): CatalogFile {
  const withDefaults = Value.Default(CatalogFileSchema, raw)
  const err = Value.Errors(CatalogFileSchema, withDefaults).First()
  if (err) throw new CatalogError(`${name}: ${err.path || '/'}: ${err.message}`)
  return withDefaults as CatalogFile
}

function paramsError(e: ErrorObject | undefined): ApiError {
  if (!e) return new ApiError('BAD_REQUEST', { field: 'body', expected: 'valid params' })
  const path = e.instancePath.replace(/^\//, '').replace(/\//g, '.')
  if (e.keyword === 'required') {
    const missing = (e.params as { missingProperty: string }).missingProperty
    return new ApiError('BAD_REQUEST', { field: path ? `${path}.${missing}` : missing, expected: 'present' })
  }
  if (e.keyword === 'additionalProperties') {
    const extra = (e.params as { additionalProperty: string }).additionalProperty
    return new ApiError('BAD_REQUEST', { field: path ? `${path}.${extra}` : extra, expected: 'absent (not a known parameter)' })
  }
  return new ApiError('BAD_REQUEST', { field: path || 'body', expected: e.message ?? 'valid' })
}
