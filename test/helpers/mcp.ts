/**
 * The official MCP TypeScript client against a listening service: the transport an agent's MCP
 * configuration sets up from the two lines it needs (the URL and the bearer header).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'

export async function mcpClient(base: string, token: string): Promise<Client> {
  const client = new Client({ name: 'pab-test', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }))
  return client
}

export interface ToolOutcome {
  isError: boolean
  text: string
  /** The JSON of the text content (the REST answer, or the REST error body). */
  json: any
  structured: unknown
}

export async function callTool(client: Client, name: string, args: Record<string, unknown> = {}): Promise<ToolOutcome> {
  const r = (await client.callTool({ name, arguments: args })) as CallToolResult
  const item = r.content[0]
  if (r.content.length !== 1 || item?.type !== 'text') throw new Error(`expected one text item, got ${JSON.stringify(r.content)}`)
  return { isError: r.isError === true, text: item.text, json: JSON.parse(item.text), structured: r.structuredContent }
}
