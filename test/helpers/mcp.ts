/**
 * The official MCP TypeScript client against a listening service: the transport an agent's MCP
 * configuration sets up from the two lines it needs (the URL and the bearer header).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll } from 'bun:test'
import { startTestApp, type TestApp } from './harness'

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

/**
 * One MCP test file's rig: a listening service (with `options`) and the clients it opened, all
 * closed after the file. Call at the top level of a test file; read `rig.t` and `rig.base` inside tests.
 */
export function mcpRig(options: Parameters<typeof startTestApp>[0] = {}) {
  const clients: Client[] = []
  const rig = {
    t: null as unknown as TestApp,
    base: '',
    async connect(token: string): Promise<Client> {
      const c = await mcpClient(rig.base, token)
      clients.push(c)
      return c
    },
  }
  beforeAll(async () => {
    rig.t = await startTestApp(options)
    rig.base = await rig.t.listen()
  })
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()))
    await rig.t.close()
  })
  return rig
}
