/**
 * The front door of a proxied request, its path already found safe (path.ts): who is calling (our
 * token in either header), the lane (the key looked up before the debit: a byok provider is always
 * the owner's lane), on the house lane what is open (house.ts) and whose objects it names
 * (house-objects.ts), a metered route's body read (model, ceiling) — each refusal before any debit —
 * then the paid request (paid-request/proxied.ts: the debit, the provider, the relay, settle once).
 * errors: UNAUTHORIZED, BYOK_REQUIRED, PROXY_UNKNOWN_PROVIDER, NOT_FOUND, BAD_REQUEST, VAULT_UNAVAILABLE,
 *         and those of payProxied.
 */
import { refusalAfterAdmission } from '../auth/refusal-after-admission'
import type { Principal } from '../auth/principal'
import { ApiError } from '../errors'
import { readMeteredProxyRequest } from '../paid-request/metered'
import { payProxied } from '../paid-request/proxied'
import { runBudgetOf } from '../paid-request/run-header'
import type { Services } from '../services'
import type { ProviderKeys } from '../vault/provider-key'
import { houseOpening, houseRefusal } from './house'
import { admitOwned, ownedPrefixOf } from './house-objects'
import type { ProxyTarget } from './path'

export interface ProxyInput {
  /** Provider and path, resolved from the raw request target by resolveProxyTarget. */
  target: ProxyTarget
  /**
   * The client's address, asked for only when the request carries no token we know (the anonymous
   * rate limit): reading it is a system call (getpeername) a proxied request need not make.
   */
  ip: () => string
}

export async function proxyRequest(s: Services, keys: ProviderKeys, request: Request, input: ProxyInput): Promise<Response> {
  const { target } = input
  const { provider } = target
  const principal = await authenticate(s, request, input.ip)
  // A run budget (docs/api.md §13c): read only when the header is there; never forwarded (upstream/headers.ts).
  const runHeader = request.headers.get('x-budget-run')
  const run = runHeader === null ? undefined : await refusalAfterAdmission(s, principal, () => runBudgetOf(runHeader, principal))

  const metering = s.catalog.meteredRoute(provider, target.decodedPath)
  // The lane decides what may pass, so the key is looked up before the debit (docs/api.md §12). A
  // byok provider is always the owner's lane; its lookup, and any lookup's failure, wait for the
  // debit as before, so that the failure is answered after the checks the debit makes, refunded.
  const looked = provider.byok ? null : await settled(keys.laneKeyFor({ kind: 'proxy', provider }, principal.accountId))
  const house = looked !== null && 'value' in looked && looked.value.lane === 'house'
  const opening = house ? houseOpening(provider, target, request.method, metering !== null) : null
  if (house && opening === null)
    await refusalAfterAdmission(s, principal, () => {
      // A vault that did not answer may hold the owner's key: the path is not refused for want of one.
      throw looked.value.vaultDown ? keys.vaultDown(provider) : houseRefusal(provider, s.cfg.VAULT_MASTER_KEY !== undefined)
    })

  // On the house lane an owned prefix's objects are the account's: decided before the debit, so a
  // refusal moves no money and reaches no provider (house-objects.ts).
  const prefix = house ? ownedPrefixOf(provider, target.decodedPath) : null
  const owned = prefix
    ? await refusalAfterAdmission(s, principal, () =>
        admitOwned({ ctx: s.ctx, log: s.log }, { provider, accountId: principal.accountId, prefix, method: request.method, decodedPath: target.decodedPath }),
      )
    : null
  // A metered route reads the body first (model, ceiling): an unpriced model is refused before any
  // debit, and so is a body naming an object the account does not own.
  const metered = metering ? await refusalAfterAdmission(s, principal, () => readMeteredProxyRequest(request, metering, s.cfg.MAX_BODY_BYTES, owned?.checkBody)) : null
  // The owner's lane is billed by the provider: a metered call pays the route's fee percent of its
  // cost (docs/api.md §12). A byok provider is always the owner's lane; a failed lookup is answered
  // after the debit, refunded, so its pricing does not matter.
  const ownersLane = provider.byok || (looked !== null && 'value' in looked && looked.value.lane === 'owner')
  const feePct = metering && ownersLane ? (metering.spec.byok_fee_pct ?? 0) : undefined
  // Filed with the call: the house lane's requests are on the operator's provider bill (docs/api.md §13d).
  const lane = ownersLane ? ('owner' as const) : house ? ('house' as const) : undefined
  return payProxied(s, request, { principal, target, looked, keys, metered, feePct, lane, run, created: owned?.record && owned.settled ? { record: owned.record, settled: owned.settled } : null })
}


/** A promise's outcome as a value: held across the debit without an unhandled rejection. */
async function settled<T>(p: Promise<T>): Promise<{ value: T } | { error: unknown }> {
  try {
    return { value: await p }
  } catch (error) {
    return { error }
  }
}

/** Our token in `Authorization: Bearer` (OpenAI-style SDKs) or `x-api-key` (Anthropic's SDK). */
async function authenticate(s: Services, request: Request, ip: () => string): Promise<Principal> {
  const auth = request.headers.get('authorization')
  const bearer = auth && /^bearer /i.test(auth) ? auth.slice(7).trim() : undefined
  const apiKey = request.headers.get('x-api-key') ?? undefined
  const principal = (await s.guard.tokens.resolve(bearer)) ?? (await s.guard.tokens.resolve(apiKey))
  if (principal) return principal
  await s.guard.admitAnonymous(ip())
  throw new ApiError('UNAUTHORIZED')
}
