/**
 * `/llms-full.txt`: the proxy routes, written for an LLM agent to read and act on — each route's
 * price or request cap, whose key it uses, how to authenticate, and base-URL settings to paste
 * into the OpenAI and Anthropic SDKs. Built from the catalog, so it never lists a route that
 * does not exist.
 */
import { IMAGE_TOKENS_BOUND, TOOLS_PROMPT_BOUND } from '../metering/media'
import { cacheWrite1hPrice, cacheWritePrice, imageBound } from '../metering/request'
import type { Config } from '../config'
import type { Catalog, Provider } from '../catalog/catalog'
import { mcpConfigLines } from '../mcp/config-snippet'

function keyStyle(p: Provider): string {
  if (p.byok) return 'bring-your-own-key only: your vaulted key (POST /v1/keys/link gives a one-time link to store it); without one → VAULT_KEY_MISSING (409)'
  if (!p.houseKey) return 'your vaulted key (POST /v1/keys/link); this deployment has no house key for it, so without one → API_UNAVAILABLE (503)'
  return "the service's house key, or your own if you vaulted one (POST /v1/keys/link)"
}

function cost(p: Provider, cfg: Config): string {
  const price = p.proxy!.price
  if (price === 0) return `unpriced (0 credits); counted against the daily request cap of ${cfg.UNPRICED_DAILY_REQUEST_CAP} requests per account (resets 00:00 HKT) → REQUEST_CAP_REACHED (429)`
  return `${price} credits per request ($${(price / cfg.CREDITS_PER_USD).toFixed(3)}), flat, debited before forwarding`
}

/**
 * What the house key serves on a route (docs/api.md §12): its metered paths, the prefixes opened by
 * `house.allow` and those under `house.owned`; everything else needs the caller's own key.
 */
function houseLines(p: Provider, cfg: Config): string[] {
  if (p.byok || !p.key_env) return []
  const px = p.proxy!
  const code = (xs: string[]) => xs.map((x) => `\`${x}\``).join(', ')
  const metered = px.metered?.routes ?? []
  const allow = px.house?.allow ?? []
  const owned = px.house?.owned ?? []
  const refused = cfg.VAULT_MASTER_KEY !== undefined ? 'BYOK_REQUIRED (402): link your own key with POST /v1/keys/link, which serves every allowed path prefix' : 'PROXY_UNKNOWN_PROVIDER (404, with house_allow)'
  return [
    '- On the house key (no vaulted key of yours) this route serves only:',
    ...(metered.length ? [`  - metered paths, charged by the tokens used (below): ${code(metered)}`] : []),
    ...(allow.length ? [`  - opened paths, at the cost above: ${code(allow)} (a leading method limits an entry to that method)`] : []),
    ...(owned.length ? [`  - your own objects (ones this account created through the house key) under: ${code(owned)}`] : []),
    `  - everything else needs your own key: ${refused}. Nothing is sent to the provider and nothing is charged.`,
    "- On the house key the provider account, organisation and project are the operator's: scope headers you send (OpenAI-Organization, OpenAI-Project, …) are dropped, and metered requests carry this account's end-user id (OpenAI `safety_identifier`, embeddings `user`, Anthropic `metadata.user_id`) in place of yours.",
  ]
}

/** A metered route's models and prices (docs/api.md §7): what a request reserves and is charged. */
function meteredLines(p: Provider, cfg: Config): string[] {
  const m = p.proxy!.metered
  if (!m) return []
  const usd = (credits: number) => `$${(credits / cfg.CREDITS_PER_USD).toFixed(3)}`
  return [
    `Metered paths (charged by the tokens used, not the flat cost above): ${(m.routes ?? []).map((r) => `\`${r}\``).join(', ')}.`,
    'Prices in credits per 1,000,000 tokens. Before forwarding, the request reserves ceil((input bound × input + output ceiling × output) / 1e6) + 1 credits',
    `(the input bound: the request body bytes, plus the model's image bound per image part (below; ${IMAGE_TOKENS_BOUND.toLocaleString('en-US')} tokens unless listed) and ${TOOLS_PROMPT_BOUND.toLocaleString('en-US')} when tools are present; file, document and audio parts, audio output, server-side tools, the priority service tier, n > 1, a predicted output, input the provider holds (previous_response_id, conversation, a stored prompt, item references), background responses and Anthropic's context-1m beta are refused: the request gives no bound or price for their tokens)`,
    `(the ceiling: your max_tokens / max_completion_tokens / max_output_tokens, else the model's max output — lowered to what you can afford, at least ${m.min_output}, and reported in x-pab-max-tokens-clamped).`,
    'After the answer, the exact usage is charged (micro-credit remainders carried per account) and the rest released; the response header x-pab-reserved shows the reservation, GET /v1/activity/{call_id} the charge.',
    ...(m.dialect === 'anthropic'
      ? ['Prompt-cache writes are charged at their own prices (below, 5-minute / 1-hour lifetime), and the reservation weighs each input byte at the highest of input and those.']
      : []),
    // The owner's lane (docs/api.md §12): with your own vaulted key the provider bills you, and this is our part.
    (m.byok_fee_pct ?? 0) > 0
      ? `With your own vaulted key for ${p.id} (POST /v1/keys/link) the provider bills you, and a metered call is charged ${m.byok_fee_pct} % of the exact cost above (reserved: ${m.byok_fee_pct} % of the reservation, rounded up).`
      : `With your own vaulted key for ${p.id} (POST /v1/keys/link) the provider bills you, and a metered call is not charged (counted against the daily request cap instead).`,
    `A model not listed → BAD_REQUEST (field model). Allowlist one model: \`proxy:${p.id}/<model-glob>\`.`,
    '',
    '| model | input | cached input | cache write (5 min / 1 h) | output | max output | image bound |',
    '|---|---|---|---|---|---|---|',
    ...Object.entries(m.models).map(
      ([id, x]) =>
        // OpenAI bills no cache write (its usage reports none): a price there would read as a charge.
        `| ${id} | ${x.input} (${usd(x.input)}) | ${x.cached_input ?? x.input} | ${m.dialect === 'anthropic' ? `${cacheWritePrice(x)} / ${cacheWrite1hPrice(x)}` : '–'} | ${x.output} (${usd(x.output)}) | ${x.max_output} | ${imageBound(x)} |`,
    ),
    '',
  ]
}

export function llmsFullText(catalog: Catalog, cfg: Config): string {
  const base = cfg.BASE_URL
  const routes = [...catalog.providers.values()].filter((p) => p.proxy)
  const has = (id: string) => routes.some((p) => p.id === id)
  const lines: string[] = [
    '# Prepaid API Balance — native passthrough proxy',
    '',
    '> Point an existing provider SDK at this service instead of at the provider. Requests and responses keep the',
    "> provider's own API shape (streaming included). The service injects the provider key, applies your account's",
    '> governance (allowlists, caps, balance) before forwarding, and debits the route price from your prepaid balance.',
    '',
    '## Authentication',
    '',
    '- Use YOUR token from POST /v1/signup (owner `sk_…` or agent `ak_…`) as the SDK api key. Never send a provider key.',
    '- Either header works: `Authorization: Bearer <token>` (OpenAI-style SDKs) or `x-api-key: <token>` (Anthropic SDK).',
    '- Both are stripped before forwarding; the provider only ever sees its own key.',
    '',
    '## Routes',
    '',
    `Every route is \`ANY ${base}/proxy/{provider}/{path}\`; {path} must start with one of the allowed prefixes.`,
    'Paths with `..`, `.`, `//`, `\\`, `@`, a scheme or percent-encoded versions of those are refused (PROXY_BAD_PATH).',
    '',
  ]
  if (routes.length === 0) lines.push('No proxy routes are configured on this deployment.', '')
  for (const p of routes) {
    lines.push(
      `### proxy:${p.id}`,
      '',
      `- Forwards: ${base}/proxy/${p.id}{path} → ${p.base_url}{path}`,
      `- Allowed path prefixes: ${p.proxy!.paths.map((x) => `\`${x}\``).join(', ')}`,
      `- Cost: ${cost(p, cfg)}`,
      `- Provider key: ${keyStyle(p)}`,
      ...houseLines(p, cfg),
      `- Injected as: \`${p.auth.header}: ${p.auth.scheme ? `${p.auth.scheme} ` : ''}<key>\`${p.headers ? `; plus, if you do not send them: ${Object.keys(p.headers).map((h) => `\`${h}\``).join(', ')}` : ''}`,
      `- Allowlist pattern: \`proxy:${p.id}\``,
      `- Example: curl ${base}/proxy/${p.id}${p.proxy!.paths[0]}… -H "Authorization: Bearer $TOKEN"`,
      '',
      ...meteredLines(p, cfg),
    )
  }
  lines.push('## SDK settings (copy-paste)', '')
  if (has('openai'))
    lines.push(
      'OpenAI SDK (JavaScript):',
      '',
      '```js',
      "import OpenAI from 'openai'",
      `const client = new OpenAI({ baseURL: '${base}/proxy/openai/v1', apiKey: process.env.PAB_TOKEN })`,
      "await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] })",
      '```',
      '',
      'OpenAI SDK (Python):',
      '',
      '```python',
      'import os',
      'from openai import OpenAI',
      `client = OpenAI(base_url="${base}/proxy/openai/v1", api_key=os.environ["PAB_TOKEN"])`,
      '```',
      '',
    )
  if (has('anthropic'))
    lines.push(
      'Anthropic SDK (JavaScript) — the SDK appends /v1/messages itself, so the base URL stops at the provider:',
      '',
      '```js',
      "import Anthropic from '@anthropic-ai/sdk'",
      `const client = new Anthropic({ baseURL: '${base}/proxy/anthropic', apiKey: process.env.PAB_TOKEN })`,
      "await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 256, messages: [{ role: 'user', content: 'Hi' }] })",
      '```',
      '',
      'Anthropic SDK (Python):',
      '',
      '```python',
      'import os',
      'from anthropic import Anthropic',
      `client = Anthropic(base_url="${base}/proxy/anthropic", api_key=os.environ["PAB_TOKEN"])`,
      '```',
      '',
    )
  for (const p of routes.filter((r) => r.id !== 'openai' && r.id !== 'anthropic'))
    lines.push(`Any other SDK for ${p.id}: set its base URL to ${base}/proxy/${p.id} (plus the API version segment if the SDK expects it in the base) and its api key to your token.`, '')
  lines.push(
    '## What to expect',
    '',
    `- Responses over ${cfg.PROXY_MAX_RESPONSE_BYTES} bytes: RESPONSE_TOO_LARGE (502) if announced by Content-Length; a streamed body that crosses it is cut off. Either way the debit is refunded.`,
    '- Provider 5xx or unreachable provider: PROVIDER_ERROR (502), debit refunded. Provider 4xx: passed through as sent, charged.',
    '- A client that disconnects mid-request aborts the upstream request; the debit stands.',
    '- Each response carries `x-pab-call-id`, `x-pab-charged` (a metered path: `x-pab-reserved`) and `x-pab-balance`; every request appears in GET /v1/activity as `proxy:{provider}`.',
    `- Rate limit: ${cfg.RATE_LIMIT_PER_TOKEN} requests per minute per token (RATE_LIMITED, 429, with Retry-After).`,
    '- Low balance: PAYMENT_REQUIRED (402) with `human_readable` — relay it to your user verbatim.',
    '- Every error is JSON `{"error": CODE, "message": …}`; the full list with remedies is at /errors.md.',
    '',
    ...mcpConfigLines(base),
    '## Other surfaces',
    '',
    '- Capabilities: GET /v1/search?q=… then POST /v1/call/{slug}. A result\'s `price` is debited per call; a metered one (price 0) carries `metered.models`, charged by the tokens as above.',
    '- Balance and caps: GET /v1/balance, GET /v1/policies. Everything: /openapi.json.',
    '- Run budgets (an agent token): send `X-Budget-Run: <run id>; max=<credits>; ttl=<seconds>` with a paid call or proxied request; every call carrying the same id counts against that run (POLICY_DENIED rule run_budget past it); list them with GET /v1/runs. Over MCP: `_meta["pab/run"]`.',
    '',
  )
  return lines.join('\n')
}
