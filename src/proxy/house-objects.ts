/**
 * Provider objects on the house lane belong to the account that made them (docs/house-objects.md).
 * Every signup shares the operator's provider account there, so the provider would serve account A's
 * stored responses and chat completions to account B. The decision is taken here, before the debit
 * and before any byte reaches the provider:
 *   - a POST to an owned prefix creates an object: its id, read from the answer (answer-id.ts), is
 *     recorded as the account's (one `SET … EX` in the account's slot: `keys.ownedObject`);
 *   - a path naming an id under an owned prefix, or a body naming a stored response
 *     (`previous_response_id`), is forwarded only when the id is the account's;
 *   - a list of everyone's objects (the bare prefix, not a create) is refused;
 *   - a body naming an object the house lane never creates (files, vector stores, …) is refused.
 * Agents read their account's objects: ownership is per account, not per token.
 * errors: NOT_FOUND (with `field`: `path`, or the body member that named the object).
 */
import type { Provider } from '../catalog/catalog'
import { ApiError } from '../errors'
import type { Log } from '../log'
import type { ApiKind } from '../metering/usage'
import type { RedisContext } from '../redis/context'

/** How long an object stays the account's: the provider keeps a stored response 30 days. */
export const OWNED_TTL_S = 30 * 24 * 3600

/**
 * The ids the providers hand out (`resp_…`, `chatcmpl-…`). Anything else in an id's place is not
 * one we recorded, and must not reach a Redis key name.
 */
const OBJECT_ID = /^[A-Za-z0-9_-]{1,200}$/

/** A house-lane request under an owned prefix, past its path decision. */
export interface OwnedScope {
  /**
   * Refuses a body that names an object the account does not own (the metered parse, reused);
   * answers the input tokens a chained `previous_response_id` carries (0 when none).
   */
  checkBody(body: Record<string, unknown>, kind: ApiKind, raw: string): Promise<number>
  /** For a create: records the id the answer carries as the account's; null otherwise. */
  record: ((objectId: string) => void) | null
  /** For a create: once its usage is the provider's, the tokens a response chained from it carries. */
  settled: ((objectId: string, contextTokens: number) => void) | null
}

/**
 * The owned prefix a decoded path falls under, or null. Compared without case, and a prefix
 * followed by anything but a path character (`;x`, `.json`) counts as under it: no spelling an
 * upstream might route to the same endpoint slips past the check (the closed-by-default rule).
 */
export function ownedPrefixOf(provider: Provider, decodedPath: string): string | null {
  const owned = provider.proxy?.house?.owned
  if (!owned?.length) return null
  const path = decodedPath.toLowerCase()
  for (const prefix of owned) {
    const p = prefix.toLowerCase()
    if (path.startsWith(p) && !/[a-z0-9_-]/.test(path.charAt(p.length))) return prefix
  }
  return null
}

interface Deps {
  ctx: Pick<RedisContext, 'redis' | 'keys'>
  log: Log
}

/**
 * The one entry point: the path decision for a house-lane request under `prefix` (throws
 * NOT_FOUND), and what the rest of the request needs from ownership.
 */
export async function admitOwned(d: Deps, o: { provider: Provider; accountId: string; prefix: string; method: string; decodedPath: string }): Promise<OwnedScope> {
  const owns = (id: string) => ownsObject(d, o.accountId, o.provider.id, id)
  const scope: OwnedScope = {
    checkBody: (body, kind, raw) => checkBody(owns, (id) => contextOf(d, o.accountId, o.provider.id, id), references(body, kind, raw)),
    record: null,
    settled: null,
  }
  const rest = o.decodedPath.replace(/\/+$/, '').slice(o.prefix.length)
  if (rest === '') {
    if (o.method === 'POST')
      return {
        ...scope,
        record: (id) => recordOwned(d, o.accountId, o.provider.id, id),
        settled: (id, tokens) => recordContext(d, o.accountId, o.provider.id, id, tokens),
      }
    // GET /v1/responses, GET /v1/chat/completions: the house organisation's objects, every account's.
    throw new ApiError('NOT_FOUND', { resource: `list under ${o.prefix} (the house key is shared: read your objects by id)`, field: 'path' })
  }
  // `/{id}` or `/{id}/…` (input_items, cancel, messages); any other spelling names nothing of ours.
  const id = rest.startsWith('/') ? rest.slice(1).split('/')[0]! : ''
  if (!(await owns(id))) throw new ApiError('NOT_FOUND', { resource: `object under ${o.prefix}`, field: 'path' })
  return scope
}

async function ownsObject(d: Deps, accountId: string, providerId: string, id: string): Promise<boolean> {
  if (!OBJECT_ID.test(id)) return false
  return (await d.ctx.redis.exists(d.ctx.keys.ownedObject(accountId, providerId, id))) === 1
}

/** A record's value until its usage is known: a response still being generated. */
const OPEN = 'open'

/**
 * What an owned record says of the input a response chained from it carries: its token count,
 * OPEN while it runs, or null when the account does not own it.
 */
async function contextOf(d: Deps, accountId: string, providerId: string, id: string): Promise<number | typeof OPEN | null> {
  if (!OBJECT_ID.test(id)) return null
  const v = await d.ctx.redis.get(d.ctx.keys.ownedObject(accountId, providerId, id))
  if (v === null) return null
  return v === OPEN || !/^\d+$/.test(v) ? OPEN : Number(v)
}

/**
 * The tokens a response chained from this one carries as input (its own input and output: the
 * provider bills the whole chain again), written once its usage is the provider's. Not awaited,
 * like the record; XX: an expired record is not brought back.
 */
function recordContext(d: Deps, accountId: string, providerId: string, id: string, tokens: number): void {
  if (!OBJECT_ID.test(id)) return
  d.ctx.redis.set(d.ctx.keys.ownedObject(accountId, providerId, id), String(tokens), 'KEEPTTL', 'XX').catch((e) =>
    d.log.error('owned_object_not_recorded', { provider: providerId, error: String(e) }),
  )
}

/**
 * One write, not awaited: the client learns the id only from bytes sent after it, and every later
 * command on the same connection (the check of a request that names the id) runs after it.
 */
function recordOwned(d: Deps, accountId: string, providerId: string, id: string): void {
  if (!OBJECT_ID.test(id)) return
  d.ctx.redis.set(d.ctx.keys.ownedObject(accountId, providerId, id), OPEN, 'EX', OWNED_TTL_S).catch((e) =>
    d.log.error('owned_object_not_recorded', { provider: providerId, error: String(e) }),
  )
}

/**
 * Members that name a stored object, wherever they sit in a request of the OpenAI dialect
 * (Responses and Chat Completions API references), and what each names. None of these objects is
 * ever created through the house lane (their create endpoints are not opened on it), so naming one
 * can only reach the operator's own or another account's data.
 */
const NEVER_OURS: Record<string, string> = {
  // input_file / input_image parts, chat `file` parts, computer-call screenshots, an image mask: an uploaded file.
  file_id: 'file',
  // code_interpreter's auto container, a file_search filter: uploaded files.
  file_ids: 'file',
  // The file_search tool: vector stores hold uploaded files.
  vector_store_ids: 'vector store',
  vector_store_id: 'vector store',
  // A code_interpreter or shell tool's container made with /v1/containers.
  container_id: 'container',
  // A skill made with /v1/skills (a shell tool's environment).
  skill_id: 'skill',
  // An MCP tool reached through the organisation's tunnel.
  tunnel_id: 'tunnel',
  // Assistants-era and batch objects a client may paste in: never ours either.
  assistant_id: 'assistant',
  thread_id: 'thread',
  input_file_id: 'file',
  batch_id: 'batch',
  upload_id: 'upload',
}

/** Top-level members of a Responses request that name stored objects (Responses API reference). */
const RESPONSES_TOP: Record<string, string> = {
  // Items of a conversation made with /v1/conversations are prepended to the input.
  conversation: 'conversation',
  // A prompt template stored in the operator's organisation (`prompt.id`).
  prompt: 'prompt',
}

/**
 * Free-form members a client fills with its own JSON (a tool's parameter schema may well have a
 * property called `file_id`): not walked.
 */
const FREE_FORM = new Set(['metadata', 'parameters', 'schema', 'json_schema', 'input_schema', 'headers', 'arguments'])

/** Only a body holding one of these spellings can name an object (a key spelt with an escape included). */
const MAY_NAME = /_ids?"|"conversation"|"prompt"|"container"|"audio"|item_reference|\\u/

interface Reference {
  field: string
  resource: string
  /** Set for a stored response, which the account may own; unset: never the account's. */
  owned?: string
}

/**
 * Refuses the first reference the account does not own; answers the input a chained response
 * carries. A response still being generated has no usage yet to bound that input: refused until it ends.
 */
async function checkBody(
  owns: (id: string) => Promise<boolean>,
  context: (id: string) => Promise<number | typeof OPEN | null>,
  refs: Reference[],
): Promise<number> {
  let held = 0
  for (const ref of refs) {
    if (ref.owned !== undefined && ref.field === 'previous_response_id') {
      const c = await context(ref.owned)
      if (c === OPEN) throw new ApiError('BAD_REQUEST', { field: ref.field, expected: 'a response that has finished (its usage bounds the input a chained request carries)' })
      if (c !== null) {
        held += c
        continue
      }
    } else if (ref.owned !== undefined && (await owns(ref.owned))) continue
    throw new ApiError('NOT_FOUND', { resource: ref.resource, field: ref.field })
  }
  return held
}

/**
 * The stored objects a request body names, in the order found (the first refused is reported).
 * `raw`, the body's text, spares the walk of a body that cannot name any.
 */
export function references(body: Record<string, unknown>, kind: ApiKind, raw: string): Reference[] {
  const found: Reference[] = []
  if (kind === 'responses') {
    const prev = body.previous_response_id
    if (prev !== undefined && prev !== null) found.push({ field: 'previous_response_id', resource: 'response', owned: typeof prev === 'string' ? prev : '' })
    for (const [k, resource] of Object.entries(RESPONSES_TOP)) if (body[k] !== undefined && body[k] !== null) found.push({ field: k, resource })
  }
  if (!MAY_NAME.test(raw)) return found
  walk(body, '', found)
  return found
}

/** Depth-first over the body's objects and arrays, skipping free-form members. */
function walk(v: unknown, at: string, found: Reference[]): void {
  if (Array.isArray(v)) {
    v.forEach((x, i) => walk(x, `${at}[${i}]`, found))
    return
  }
  if (!v || typeof v !== 'object') return
  const o = v as Record<string, unknown>
  // An input item that only points at an item of a stored response (Responses API `item_reference`).
  if (o.type === 'item_reference') found.push({ field: `${at}.id`.replace(/^\./, ''), resource: 'stored item' })
  for (const [k, x] of Object.entries(o)) {
    const field = at ? `${at}.${k}` : k
    if (FREE_FORM.has(k)) continue
    const resource = NEVER_OURS[k]
    if (resource && named(x)) found.push({ field, resource })
    // code_interpreter's `container`: a string is the id of a container made with /v1/containers.
    else if (k === 'container' && typeof x === 'string') found.push({ field, resource: 'container' })
    // A chat assistant turn's `audio: {id}` names an earlier audio answer the provider stored.
    else if (k === 'audio' && x && typeof x === 'object' && 'id' in x) found.push({ field: `${field}.id`, resource: 'audio answer' })
    else walk(x, field, found)
  }
}

/** Whether a member's value names anything (null, '' and [] name nothing). */
function named(x: unknown): boolean {
  if (x === null || x === undefined || x === '') return false
  return !Array.isArray(x) || x.length > 0
}
