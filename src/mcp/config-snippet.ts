/**
 * The two lines an agent's MCP configuration needs — the URL and the bearer header — as a typical
 * client's `mcpServers` entry; shown by /llms-full.txt (the README carries the same snippet).
 */
export function mcpConfigLines(baseUrl: string): string[] {
  const config = { mcpServers: { 'prepaid-balance': { type: 'http', url: `${baseUrl}/mcp`, headers: { Authorization: 'Bearer <your sk_… or ak_… token>' } } } }
  return [
    '## MCP (Model Context Protocol)',
    '',
    `The same balance as MCP tools: add the server \`${baseUrl}/mcp\` (Streamable HTTP) with the header \`Authorization: Bearer <token>\`.`,
    '',
    '```json',
    JSON.stringify(config, null, 2),
    '```',
    '',
    '- Tools: search_capabilities, call_capability {slug, params, idempotency_key?}, get_balance, get_activity, top_up, request_vault_link,',
    '  file_support_problem, propose; with the owner token also list_agents, kill_agent, revive_agent, set_policies; and one tool per',
    '  live capability (web.search → web_search) with its price in the description.',
    '- A refusal is a tool error whose text is the REST error body; on PAYMENT_REQUIRED relay human_readable and enable_url verbatim.',
    '- The server is stateless and sends no list_changed notification: list tools again when a call answers API_PAUSED.',
    '',
  ]
}
