/**
 * The capability catalog: loaded and validated once at boot (a bad file stops the boot with the
 * offending path), searched, and consulted on every call. Pause state lives in Redis (shared by all
 * instances) and is mirrored here, refreshed every second and at once on this instance's changes.
 * errors: UNKNOWN_API, API_PAUSED, API_UNAVAILABLE, BAD_REQUEST (params).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Value } from '@sinclair/typebox/value'
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv'
import { ApiError } from '../errors'
import { CatalogFileSchema, type CapabilitySpec, type CatalogFile, type ProviderSpec } from './schema'

export const DEFAULT_CATALOG = join(import.meta.dir, '..', '..', 'catalog.json')

export interface Provider extends ProviderSpec {
  id: string
  /** The house key from `key_env`, when the deployment has one. */
  houseKey: string | null
}

export interface Capability extends CapabilitySpec {
  validate: ValidateFunction
}

export type CapabilityState = 'live' | 'paused' | 'unavailable'

export class CatalogError extends Error {}

export class Catalog {
  readonly providers = new Map<string, Provider>()
  readonly capabilities = new Map<string, Capability>()
  private paused = new Set<string>()

  constructor(file: CatalogFile, env: Record<string, string | undefined>) {
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
    file.capabilities.forEach((cap, i) => {
      if (!this.providers.has(cap.provider)) throw new CatalogError(`/capabilities/${i}/provider: unknown provider "${cap.provider}"`)
      if (this.capabilities.has(cap.slug)) throw new CatalogError(`/capabilities/${i}/slug: duplicate slug "${cap.slug}"`)
      let validate: ValidateFunction
      try {
        validate = ajv.compile(cap.params)
      } catch (e) {
        throw new CatalogError(`/capabilities/${i}/params: not a valid JSON Schema (${(e as Error).message})`)
      }
      this.capabilities.set(cap.slug, { ...cap, validate })
    })
  }

  static load(path: string | undefined, env: Record<string, string | undefined>): Catalog {
    const file = path ?? DEFAULT_CATALOG
    let raw: unknown
    try {
      raw = JSON.parse(readFileSync(file, 'utf8'))
    } catch (e) {
      throw new CatalogError(`${file}: ${(e as Error).message}`)
    }
    const withDefaults = Value.Default(CatalogFileSchema, raw)
    const err = Value.Errors(CatalogFileSchema, withDefaults).First()
    if (err) throw new CatalogError(`${file}: ${err.path || '/'}: ${err.message}`)
    return new Catalog(withDefaults as CatalogFile, env)
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

  /** Validates a call body against the capability's params schema. */
  checkParams(cap: Capability, body: unknown): void {
    if (cap.validate(body)) return
    throw paramsError(cap.validate.errors?.[0])
  }

  /** Ranked by where the words match: slug first, then description. */
  search(q: string): Capability[] {
    const words = q.toLowerCase().split(/[\s,]+/).filter(Boolean)
    const scored: [number, Capability][] = []
    for (const cap of this.capabilities.values()) {
      const slug = cap.slug.toLowerCase()
      const text = `${cap.description} ${cap.provider} ${cap.lane}`.toLowerCase()
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
